import { closeSync, constants, fchmodSync, fchownSync, fstatSync, lstatSync, mkdtempSync, chownSync, openSync, Stats, unlinkSync, writeSync } from 'node:fs';
import { EmbeddedPostgresUnsafePathError } from './embedded-postgres-unsafe-path.error';
import type { ServerUser } from './postgres-binaries';

/**
 * Folders and files of the embedded PostgreSQL that hold secrets (its
 * password) or that its user runs (its binaries): made so that no other
 * user can have planted them or read them. Nothing here follows a symbolic
 * link.
 */

/** Group or others may write: anyone of them could swap what is inside. */
const WRITABLE_BY_OTHERS = 0o022;

/** The uid of this process (0 where there are no uids). */
export function ownUid(): number {
  return typeof process.getuid === 'function' ? process.getuid() : 0;
}

/** The folder at `path` as it is (no link followed), or undefined if there is none. */
export function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Checks that `stats` (of `path`) is a real folder, owned by one of
 * `owners`, that neither group nor others may write; throws
 * EmbeddedPostgresUnsafePathError otherwise.
 */
export function assertPrivateFolder(path: string, stats: Stats, owners: readonly number[]): void {
  if (stats.isSymbolicLink()) throw new EmbeddedPostgresUnsafePathError(path, 'it is a symbolic link, not a folder');
  if (!stats.isDirectory()) throw new EmbeddedPostgresUnsafePathError(path, 'it is not a folder');
  if (!owners.includes(stats.uid)) throw new EmbeddedPostgresUnsafePathError(path, `it belongs to uid ${stats.uid}, not to ${owners.map((uid) => `uid ${uid}`).join(' or ')}`);
  if ((stats.mode & WRITABLE_BY_OTHERS) !== 0) {
    throw new EmbeddedPostgresUnsafePathError(path, `its group or other users may write it (mode ${(stats.mode & 0o777).toString(8)}; chmod go-w it)`);
  }
}

/** A new folder named `prefix` plus random characters (mode 0700, as mkdtemp makes it), given to `owner`. */
export function makePrivateFolder(prefix: string, owner: ServerUser | undefined): string {
  const folder = mkdtempSync(prefix);
  if (owner) chownSync(folder, owner.uid, owner.gid);
  return folder;
}

/**
 * Writes `content` to a new file at `path`, mode 0600, given to `owner` if
 * set: whatever was there (a file, or a symbolic link someone planted) is
 * removed first, never written through, and the file is created with
 * O_EXCL | O_NOFOLLOW. Its folder must be private (assertPrivateFolder).
 */
export function writePrivateFile(path: string, content: string, owner?: ServerUser): void {
  const existing = lstatOrUndefined(path);
  if (existing?.isDirectory()) throw new EmbeddedPostgresUnsafePathError(path, 'it is a folder, where a file belongs');
  // unlink removes a symbolic link itself, not what it points to.
  if (existing) unlinkSync(path);
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, content);
    if (owner) fchownSync(fd, owner.uid, owner.gid);
  } finally {
    closeSync(fd);
  }
}

/**
 * Opens `path` to append to, creating it with mode 0600: a symbolic link
 * there is refused (O_NOFOLLOW), as is a file another user owns, and an
 * existing file is made 0600. Returns the descriptor.
 */
export function openPrivateLog(path: string): number {
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw new EmbeddedPostgresUnsafePathError(path, 'it is a symbolic link, not a file');
    throw error;
  }
  const stats = fstatSync(fd);
  if (!stats.isFile() || stats.uid !== ownUid()) {
    closeSync(fd);
    throw new EmbeddedPostgresUnsafePathError(path, stats.isFile() ? `it belongs to uid ${stats.uid}` : 'it is not a regular file');
  }
  fchmodSync(fd, 0o600);
  return fd;
}
