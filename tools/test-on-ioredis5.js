#!/usr/bin/env node
// Runs the Redis and fault tests again on ioredis 5 (the repository develops
// on ioredis 6): the driver's guarantees must not rest on one version's
// reconnect behaviour. ioredis 5 is installed once under node_modules/.ioredis5.
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const { spawnSync } = require('node:child_process');

const root = join(__dirname, '..');
const prefix = join(root, 'node_modules', '.ioredis5');
const dir = join(prefix, 'node_modules', 'ioredis');

function run(command, args, env = process.env) {
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit', env });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

if (!existsSync(join(dir, 'package.json'))) {
  run('npm', ['install', '--prefix', prefix, '--no-save', '--no-audit', '--no-fund', '--no-package-lock', 'ioredis@^5']);
}
const version = require(join(dir, 'package.json')).version;
console.log(`Redis and fault tests on ioredis ${version}`);
run(process.execPath, [require.resolve('jest/bin/jest'), 'test/redis', 'test/faults', 'test/conformance', ...process.argv.slice(2)], { ...process.env, IOREDIS_DIR: dir });
