#!/usr/bin/env node
/*
 * Compatibility check of the packed package, as users install it.
 *
 * Builds the library, packs it with `npm pack -w libs/delay`, and installs the
 * tarball with a plain `npm install` (no --legacy-peer-deps) into small
 * fixture apps: Nest 10, 11 and 12, CommonJS and ESM, ioredis 5 and 6, and a
 * wheel-only app without ioredis. Each fixture gets tools/compat/fixtures/common/src
 * plus its own package.json and tsconfig(s), is type-checked with tsc, then
 * booted with node: one @OnDelayExpired handler must fire after a short real
 * delay, and again under nestjs-delay/testing's VirtualClock. Fixtures marked
 * `redis` run the real delay on the Redis driver, against a redis-server this
 * script starts on a free port (REDIS_SERVER_BIN, else redis-server on the
 * PATH) and stops.
 *
 * Fixtures are copied to a temporary directory outside the repository, so
 * nothing resolves from the repository's own node_modules (a wheel-only
 * fixture must not find ioredis there). They share npm's cache.
 *
 *   npm run compat                 # everything
 *   npm run compat -- nest10-cjs   # some fixtures only
 *   npm run compat -- --keep       # keep the temporary directory to look into
 *   npm run compat -- --no-build   # pack libs/delay/dist as it is
 *
 * Exits non-zero when any step of any fixture fails, after printing a table.
 */
'use strict';

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const FIXTURES_DIR = path.join(__dirname, 'fixtures');
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

/** The matrix. `tsconfigs` after the first are type-checked only (noEmit). */
const FIXTURES = [
  { name: 'nest10-cjs', label: 'Nest 10, CommonJS, node10 resolution', ioredis: true, redis: true, tsconfigs: ['tsconfig.json'] },
  { name: 'nest11-cjs', label: 'Nest 11, CommonJS, nodenext', ioredis: true, redis: false, tsconfigs: ['tsconfig.json'] },
  { name: 'nest12-cjs', label: 'Nest 12, nest new tsconfig (+ bundler)', ioredis: true, redis: true, tsconfigs: ['tsconfig.json', 'tsconfig.bundler.json'] },
  { name: 'nest12-esm', label: 'Nest 12, "type": "module", nodenext', ioredis: true, redis: true, tsconfigs: ['tsconfig.json'] },
  { name: 'wheel-only', label: 'Nest 12, no ioredis, skipLibCheck false', ioredis: false, redis: false, tsconfigs: ['tsconfig.json'] },
];

/** Files the packed package must hold, whatever else it has. */
const REQUIRED_IN_PACKAGE = ['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE', 'dist/index.js', 'dist/index.d.ts', 'dist/testing/index.js', 'dist/testing/index.d.ts'];

const INSTALL_TIMEOUT_MS = 180_000;
const STEP_TIMEOUT_MS = 90_000;

function parseArgs(argv) {
  const args = { keep: false, build: true, only: [] };
  for (const arg of argv) {
    if (arg === '--keep') args.keep = true;
    else if (arg === '--no-build') args.build = false;
    else if (arg.startsWith('-')) throw new Error(`unknown option ${arg}`);
    else args.only.push(arg);
  }
  const unknown = args.only.filter((name) => !FIXTURES.some((fixture) => fixture.name === name));
  if (unknown.length > 0) throw new Error(`unknown fixture(s) ${unknown.join(', ')}; known: ${FIXTURES.map((f) => f.name).join(', ')}`);
  return args;
}

/** Runs a command; resolves with its exit code and combined output, never rejects. */
function run(command, args, options = {}) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(command, args, { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const timer = setTimeout(() => {
      output += `\n[killed after ${options.timeoutMs} ms]`;
      child.kill('SIGKILL');
    }, options.timeoutMs ?? STEP_TIMEOUT_MS);
    child.on('error', (error) => (output += `\n${error.message}`));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), output, ms: Date.now() - started });
    });
  });
}

function npmCommand() {
  return process.platform === 'win32' ? 'npm.cmd' : 'npm';
}

/** npm's own noise that says nothing about the fixture. */
function quiet(output) {
  return output
    .split('\n')
    .filter((line) => !/^npm warn Unknown (user|env) config/.test(line))
    .join('\n')
    .trim();
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function ping(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let reply = '';
    socket.setTimeout(500, () => socket.destroy());
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk;
      if (reply.includes('\r\n')) socket.end();
    });
    socket.on('close', () => resolve(reply.startsWith('+PONG')));
    socket.on('error', () => resolve(false));
  });
}

/** A throwaway redis-server on a free port (never 6379), no persistence. */
async function startRedis(workDir) {
  const bin = process.env.REDIS_SERVER_BIN || 'redis-server';
  let port = await freePort();
  while (port === 6379) port = await freePort();
  const dir = path.join(workDir, 'redis');
  fs.mkdirSync(dir);
  const child = spawn(bin, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  // Never leave it behind, whatever way this script ends.
  process.on('exit', () => child.kill('SIGKILL'));
  let failed;
  child.on('error', (error) => (failed = error));
  for (let i = 0; i < 100 && !failed; i++) {
    if (await ping(port)) return { url: `redis://127.0.0.1:${port}`, stop: () => child.kill('SIGTERM') };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  child.kill('SIGKILL');
  throw new Error(`redis-server (${bin}) did not answer on port ${port}${failed ? `: ${failed.message}` : ''}`);
}

/** Builds and packs the library; checks what the tarball holds. */
async function pack(workDir, build) {
  if (build) {
    fs.rmSync(path.join(ROOT, 'libs', 'delay', 'dist'), { recursive: true, force: true });
    const built = await run(npmCommand(), ['run', 'build:lib'], { cwd: ROOT, timeoutMs: 180_000 });
    if (built.code !== 0) throw new Error(`npm run build:lib failed:\n${quiet(built.output)}`);
  }
  const packed = await run(npmCommand(), ['pack', '-w', 'libs/delay', '--pack-destination', workDir, '--json'], { cwd: ROOT });
  if (packed.code !== 0) throw new Error(`npm pack failed:\n${quiet(packed.output)}`);
  const json = packed.output.slice(packed.output.indexOf('['));
  const [info] = JSON.parse(json);
  const tarball = path.join(workDir, 'nestjs-delay.tgz');
  fs.renameSync(path.join(workDir, info.filename), tarball);
  const files = new Set(info.files.map((file) => file.path));
  const problems = REQUIRED_IN_PACKAGE.filter((file) => !files.has(file)).map((file) => `missing ${file}`);
  for (const file of files) {
    if (/\.spec\.(js|d\.ts)$/.test(file)) problems.push(`ships a test: ${file}`);
  }
  // Source maps must resolve for a user: each carries its sources.
  const mapPath = path.join(ROOT, 'libs', 'delay', 'dist', 'index.js.map');
  const map = JSON.parse(fs.readFileSync(mapPath, 'utf8'));
  if (!Array.isArray(map.sourcesContent) || map.sourcesContent.length !== map.sources.length) problems.push('dist/index.js.map has no sourcesContent');
  return { tarball, version: info.version, files: files.size, size: info.size, problems };
}

/** Copies the fixture and the shared sources into the work directory. */
function prepare(fixture, workDir) {
  const dir = path.join(workDir, fixture.name);
  fs.cpSync(path.join(FIXTURES_DIR, fixture.name), dir, { recursive: true });
  fs.cpSync(path.join(FIXTURES_DIR, 'common', 'src'), path.join(dir, 'src'), { recursive: true });
  if (!fixture.ioredis) fs.rmSync(path.join(dir, 'src', 'ioredis-client.ts'));
  return dir;
}

function installedVersion(dir, name) {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', name, 'package.json'), 'utf8')).version;
  } catch {
    return '-';
  }
}

function findMain(dir) {
  for (const candidate of ['dist/main.js', 'dist/src/main.js']) {
    if (fs.existsSync(path.join(dir, candidate))) return candidate;
  }
  return undefined;
}

/** install, tsc, boot; each step's result goes in `row`, the first failure stops the fixture. */
async function checkFixture(fixture, workDir, redis, row) {
  const started = Date.now();
  const dir = prepare(fixture, workDir);
  const fail = (step, output) => {
    row[step] = 'FAIL';
    row.failures.push({ step, output: quiet(output) });
  };
  try {
    // Plain npm install: a peer range that refuses the fixture's Nest or ioredis fails here (ERESOLVE).
    const install = await run(npmCommand(), ['install', '--no-audit', '--no-fund', '--prefer-offline', '--legacy-peer-deps=false', '--loglevel=error'], {
      cwd: dir,
      timeoutMs: INSTALL_TIMEOUT_MS,
    });
    if (install.code !== 0) return fail('install', install.output);
    row.nest = installedVersion(dir, '@nestjs/core');
    row.ioredisVersion = installedVersion(dir, 'ioredis');
    if (!fixture.ioredis && row.ioredisVersion !== '-') return fail('install', `ioredis ${row.ioredisVersion} got installed into a fixture that must not have it`);
    row.install = 'ok';

    for (const [index, tsconfig] of fixture.tsconfigs.entries()) {
      const args = [TSC, '-p', tsconfig, '--pretty', 'false'];
      if (index > 0) args.push('--noEmit');
      const tsc = await run(process.execPath, args, { cwd: dir });
      if (tsc.code !== 0) return fail('tsc', `tsc -p ${tsconfig}\n${tsc.output}`);
    }
    row.tsc = 'ok';

    const main = findMain(dir);
    if (!main) return fail('boot', 'tsc emitted no main.js');
    const env = { COMPAT_REDIS_URL: '', COMPAT_EXPECT_NO_IOREDIS: fixture.ioredis ? '' : '1' };
    if (fixture.redis) {
      if (!redis.url) return fail('boot', `no redis-server: ${redis.error}`);
      Object.assign(env, { COMPAT_REDIS_URL: redis.url, COMPAT_REDIS_PREFIX: `compat-${fixture.name}` });
    }
    const boot = await run(process.execPath, ['--enable-source-maps', main], { cwd: dir, env, timeoutMs: STEP_TIMEOUT_MS });
    row.checks = boot.output
      .split('\n')
      .filter((line) => /^(ok|FAIL) /.test(line))
      .map((line) => line.trim());
    if (boot.code !== 0) return fail('boot', boot.output);
    row.boot = 'ok';
  } finally {
    row.seconds = ((Date.now() - started) / 1000).toFixed(1);
  }
}

/** Runs `worker` over `items`, at most `limit` at a time. */
async function pool(items, limit, worker) {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++];
      await worker(item);
    }
  });
  await Promise.all(lanes);
}

function printTable(rows) {
  const header = ['fixture', 'what', '@nestjs/core', 'ioredis', 'real delay on', 'install', 'tsc', 'boot', 's'];
  const lines = rows.map((row) => [row.name, row.label, row.nest, row.ioredisVersion, row.driver, row.install, row.tsc, row.boot, row.seconds]);
  const widths = header.map((title, i) => Math.max(title.length, ...lines.map((line) => String(line[i]).length)));
  const format = (cells) => cells.map((cell, i) => String(cell).padEnd(widths[i])).join('  ');
  console.log(format(header));
  console.log(widths.map((width) => '-'.repeat(width)).join('  '));
  for (const line of lines) console.log(format(line));
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const fixtures = args.only.length > 0 ? FIXTURES.filter((fixture) => args.only.includes(fixture.name)) : FIXTURES;
  const started = Date.now();
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nestjs-delay-compat-'));
  let redis = {};
  let failed = false;
  try {
    const packed = await pack(workDir, args.build);
    console.log(`packed nestjs-delay ${packed.version}: ${packed.files} files, ${(packed.size / 1024).toFixed(0)} kB`);
    if (packed.problems.length > 0) {
      failed = true;
      console.log(`FAIL package: ${packed.problems.join('; ')}`);
    }
    if (fixtures.some((fixture) => fixture.redis)) {
      try {
        redis = await startRedis(workDir);
        console.log(`redis-server on ${redis.url}`);
      } catch (error) {
        redis = { error: error.message };
      }
    }
    const rows = fixtures.map((fixture) => ({
      name: fixture.name,
      label: fixture.label,
      driver: fixture.redis ? 'redis' : fixture.ioredis ? 'wheel' : 'wheel; redis refused',
      nest: '-',
      ioredisVersion: '-',
      install: '-',
      tsc: '-',
      boot: '-',
      seconds: '-',
      checks: [],
      failures: [],
    }));
    // Installs are mostly waiting on the disk and the cache: three at a time keeps two cores busy.
    await pool(fixtures, 3, (fixture) => checkFixture(fixture, workDir, redis, rows[fixtures.indexOf(fixture)]));

    for (const row of rows) {
      for (const failure of row.failures) {
        failed = true;
        console.log(`\n--- ${row.name}: ${failure.step} failed ---\n${failure.output.split('\n').slice(0, 40).join('\n')}`);
      }
    }
    console.log('');
    for (const row of rows) for (const check of row.checks) console.log(`${row.name.padEnd(11)} ${check}`);
    console.log('');
    printTable(rows);
    if (rows.some((row) => row.boot !== 'ok')) failed = true;
  } finally {
    if (redis.stop) redis.stop();
    if (args.keep || failed) console.log(`\nwork directory kept: ${workDir}`);
    else fs.rmSync(workDir, { recursive: true, force: true });
  }
  console.log(`\ncompat: ${failed ? 'FAILED' : 'passed'} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  process.exitCode = failed ? 1 : 0;
}

main().catch((error) => {
  console.error(`compat: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
});
