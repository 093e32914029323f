import { createHash } from 'node:crypto';
import { chmodSync, cpSync, existsSync, lstatSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { execFileSync, spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { EmbeddedPostgresUnsafePathError } from './embedded-postgres-unsafe-path.error';
import { assertPrivateFolder, lstatOrUndefined, ownUid } from './private-paths';

/** The system user a PostgreSQL server runs as when this process is root (PostgreSQL refuses root). */
export interface ServerUser {
  readonly uid: number;
  readonly gid: number;
}

/** As root, the 'postgres' system user (created if missing); otherwise undefined: the server runs as this process's user. */
export function serverUser(): ServerUser | undefined {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  if (spawnSync('id', ['-u', 'postgres']).status !== 0) execFileSync('useradd', ['--system', '--no-create-home', '--user-group', 'postgres']);
  const id = (flag: string): number => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** Whether `user` can enter and write `folder` (every folder above it must let it through). */
export function reachableBy(user: ServerUser, folder: string): boolean {
  return spawnSync('test', ['-w', folder, '-a', '-x', folder], { uid: user.uid, gid: user.gid }).status === 0;
}

/**
 * The folder of the PostgreSQL binaries that the embedded-postgres package
 * installs for this platform (found by folder: the package exports only an
 * ES module entry), or undefined when it is not installed. When the server
 * runs as another user that cannot reach them (a checkout inside a folder
 * only root may enter, such as a fresh `mktemp -d`), they are copied once to
 * a folder of the system's temporary directory that every user may read
 * (sharedCopyOf).
 */
export function postgresBinDir(user?: ServerUser): string | undefined {
  const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;
  let bin: string | undefined;
  for (const folder of require.resolve.paths(platformPackage) ?? []) {
    const candidate = join(folder, platformPackage, 'native', 'bin');
    if (existsSync(join(candidate, 'postgres'))) {
      bin = candidate;
      break;
    }
  }
  if (bin === undefined || user === undefined) return bin;
  if (spawnSync(join(bin, 'postgres'), ['--version'], { uid: user.uid, gid: user.gid }).status === 0) return bin;
  return join(sharedCopyOf(dirname(bin)), 'bin');
}

/**
 * A copy of the `native` folder (bin, lib, share) in the system's
 * temporary directory, readable by everyone, named after the folder and
 * its postgres binary's time, so later starts reuse it. The copy is made in
 * a private folder of an unpredictable name (mkdtemp) and then renamed into
 * place; a folder found at that name (made earlier, or by another shop at
 * the same moment) is used only if it is a real folder of this user that
 * nobody else may write: one planted by another user, or a symbolic link,
 * could hold binaries of theirs, and is refused with an
 * EmbeddedPostgresUnsafePathError.
 */
export function sharedCopyOf(native: string): string {
  const hash = createHash('sha1').update(native).update(String(statSync(join(native, 'bin', 'postgres')).mtimeMs)).digest('hex').slice(0, 12);
  const copy = join(tmpdir(), `nestjs-delay-postgres-${hash}`);
  if (!isEntry(copy)) {
    const partial = mkdtempSync(join(tmpdir(), `nestjs-delay-postgres-${hash}.`));
    cpSync(native, partial, { recursive: true, verbatimSymlinks: true });
    openToEveryone(partial);
    try {
      renameSync(partial, copy);
    } catch {
      // Another process made the same copy first (or someone else put a folder there: checked below).
      rmSync(partial, { recursive: true, force: true });
    }
  }
  assertOwnCopy(copy);
  return copy;
}

function isEntry(path: string): boolean {
  return lstatOrUndefined(path) !== undefined;
}

/** The copy must be this user's real folder, which neither group nor others may write (what it holds was made by the same user, in it). */
function assertOwnCopy(copy: string): void {
  assertPrivateFolder(copy, lstatSync(copy), [ownUid()]);
  if (!existsSync(join(copy, 'bin', 'postgres'))) throw new EmbeddedPostgresUnsafePathError(copy, 'it holds no bin/postgres: it is not a copy of the PostgreSQL binaries');
}

/** Read (and enter or run) for everyone, as `chmod -R a+rX` does. */
function openToEveryone(path: string): void {
  const stats = statSync(path);
  chmodSync(path, stats.mode | (stats.isDirectory() || stats.mode & 0o100 ? 0o555 : 0o444));
  if (stats.isDirectory()) for (const entry of readdirSync(path)) openToEveryone(join(path, entry));
}
