import { createHash } from 'node:crypto';
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { EmbeddedPostgres } from '../../apps/shop/src/database/embedded-postgres';
import { EmbeddedPostgresUnsafePathError } from '../../apps/shop/src/database/embedded-postgres-unsafe-path.error';
import { sharedCopyOf } from '../../apps/shop/src/database/postgres-binaries';
import { bootShop, BootedShop } from './shop-test-app';

/** Another local user: the one who plants folders and links. */
const NOBODY = 65_534;
const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;

/**
 * The embedded PostgreSQL of `npm start` run as root (the server then runs
 * as 'postgres'): what another local user could plant in the temporary
 * directory is neither trusted nor written through, its files are the
 * owner's alone, and the shop connects as a role that is not a superuser.
 */
(asRoot ? describe : describe.skip)('Embedded PostgreSQL (e2e, as root): private folders and files, a role that is not a superuser', () => {
  let root: string;
  const started: EmbeddedPostgres[] = [];
  const planted: string[] = [];
  let shop: BootedShop | undefined;

  jest.setTimeout(120_000);

  beforeEach(() => {
    // Only root may enter it: the postgres user cannot reach a data folder inside.
    root = mkdtempSync(join(tmpdir(), 'shop-root-'));
  });

  afterEach(async () => {
    await shop?.app.close();
    shop = undefined;
    for (const server of started.splice(0)) await server.stop();
    for (const path of planted.splice(0)) rmSync(path, { recursive: true, force: true });
    rmSync(root, { recursive: true, force: true });
  });

  async function start(dir: string): Promise<EmbeddedPostgres> {
    const server = await EmbeddedPostgres.start(dir);
    started.push(server);
    planted.push(server.home);
    return server;
  }

  /** A folder of another user's, as they would make it: theirs, anyone may write it. */
  function foreignFolder(): string {
    const folder = mkdtempSync(join(tmpdir(), 'planted-'));
    planted.push(folder);
    chmodSync(folder, 0o777);
    chownSync(folder, NOBODY, NOBODY);
    return folder;
  }

  async function refusal(dir: string): Promise<EmbeddedPostgresUnsafePathError> {
    const error = await EmbeddedPostgres.start(dir).then(
      (server) => {
        started.push(server);
        return undefined;
      },
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(EmbeddedPostgresUnsafePathError);
    return error as EmbeddedPostgresUnsafePathError;
  }

  it('does not follow a link planted at the old predictable folder: its password goes to a private folder of its own (0700, the postgres user\'s), postgres.log is 0600', async () => {
    const dir = join(root, 'data');
    const target = foreignFolder();
    // Where the shop used to keep its cluster when the postgres user could not reach its folder.
    const predictable = join(tmpdir(), `nestjs-delay-shop-${createHash('sha1').update(dir).digest('hex').slice(0, 12)}`);
    rmSync(predictable, { recursive: true, force: true });
    symlinkSync(target, predictable);
    planted.push(predictable);

    const server = await start(dir);
    expect(readdirSync(target)).toEqual([]);
    expect(lstatSync(target).uid).toBe(NOBODY);
    expect(server.home).not.toBe(predictable);
    const home = lstatSync(server.home);
    expect(home.isDirectory()).toBe(true);
    expect(home.mode & 0o777).toBe(0o700);
    expect(home.uid).not.toBe(0);
    expect(statSync(join(server.home, 'password')).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'postgres.log')).mode & 0o777).toBe(0o600);
  });

  it.each([
    ['another user owns the data folder', (dir: string) => chownSync(dir, NOBODY, NOBODY), 'it belongs to uid 65534'],
    ['others may write the data folder', (dir: string) => chmodSync(dir, 0o777), 'its group or other users may write it (mode 777'],
  ])('refuses to start when %s, and writes nothing in it', async (_case, plant, reason) => {
    const dir = join(root, 'data');
    mkdirSync(dir, { mode: 0o700 });
    plant(dir);
    const error = await refusal(dir);
    expect(error.message).toContain(`Refusing ${dir}: ${reason}`);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('on a restart, refuses its private folder once it is replaced by another user\'s folder or by a link, and writes nothing there', async () => {
    const dir = join(root, 'data');
    const first = await start(dir);
    const home = first.home;
    await first.stop();
    started.splice(0);

    // Gone (the temporary directory emptied), and made again by someone else under the same name.
    rmSync(home, { recursive: true, force: true });
    mkdirSync(home, { mode: 0o700 });
    chownSync(home, NOBODY, NOBODY);
    expect((await refusal(dir)).message).toContain(`Refusing ${home}: it belongs to uid 65534`);
    expect(readdirSync(home)).toEqual([]);

    rmSync(home, { recursive: true, force: true });
    const target = foreignFolder();
    symlinkSync(target, home);
    expect((await refusal(dir)).message).toContain(`Refusing ${home}: it is a symbolic link`);
    expect(readdirSync(target)).toEqual([]);
  });

  it('does not write postgres.log through a link planted in its place', async () => {
    const dir = join(root, 'data');
    mkdirSync(dir, { mode: 0o700 });
    const victim = join(foreignFolder(), 'victim');
    writeFileSync(victim, 'untouched\n');
    symlinkSync(victim, join(dir, 'postgres.log'));
    expect((await refusal(dir)).message).toContain(`Refusing ${join(dir, 'postgres.log')}: it is a symbolic link`);
    expect(readFileSync(victim, 'utf8')).toBe('untouched\n');
  });

  it('refuses a copy of the PostgreSQL binaries that another user put where the copy goes', () => {
    const native = join(root, 'native');
    mkdirSync(join(native, 'bin'), { recursive: true });
    writeFileSync(join(native, 'bin', 'postgres'), '#!/bin/sh\n', { mode: 0o755 });
    const hash = createHash('sha1').update(native).update(String(statSync(join(native, 'bin', 'postgres')).mtimeMs)).digest('hex').slice(0, 12);
    const copy = join(tmpdir(), `nestjs-delay-postgres-${hash}`);
    planted.push(copy);
    mkdirSync(join(copy, 'bin'), { recursive: true });
    writeFileSync(join(copy, 'bin', 'postgres'), '#!/bin/sh\necho planted\n', { mode: 0o755 });
    chownSync(copy, NOBODY, NOBODY);
    expect(() => sharedCopyOf(native)).toThrow(EmbeddedPostgresUnsafePathError);
    expect(() => sharedCopyOf(native)).toThrow(`Refusing ${copy}: it belongs to uid 65534`);

    // Once it is gone, the copy is made afresh: this user's, readable by all, written by no one else.
    rmSync(copy, { recursive: true, force: true });
    expect(sharedCopyOf(native)).toBe(copy);
    expect(lstatSync(copy).uid).toBe(0);
    expect(lstatSync(copy).mode & 0o777).toBe(0o755);
    expect(readFileSync(join(copy, 'bin', 'postgres'), 'utf8')).toBe('#!/bin/sh\n');
  });

  it('lets the shop (TypeORM and the postgres delay driver) connect as its own role, which is not a superuser; the shop still takes orders', async () => {
    const server = await start(join(root, 'data'));
    expect(new URL(server.url).username).toBe('shop');
    shop = await bootShop({ env: { DATABASE_URL: server.url, DELAY_DRIVER: 'postgres' } });
    await shop.http
      .post('/orders')
      .send({ buyerId: 'ann', lines: [{ sku: 'green-tea', quantity: 1 }] })
      .expect(201);
    const database = shop.app.get(DataSource);
    const [role] = (await database.query('SELECT rolsuper, rolcreaterole, rolcreatedb, rolbypassrls FROM pg_roles WHERE rolname = current_user')) as Array<Record<string, boolean>>;
    expect(role).toEqual({ rolsuper: false, rolcreaterole: false, rolcreatedb: false, rolbypassrls: false });
    // Every session on the shop's database (TypeORM's pool, the delay driver's pool and its LISTEN connection) is the shop's role.
    const sessions = (await database.query("SELECT DISTINCT usename, application_name FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'")) as Array<{ usename: string }>;
    expect(sessions.length).toBeGreaterThan(0);
    expect(new Set(sessions.map((session) => session.usename))).toEqual(new Set(['shop']));
    // What a superuser alone may do is refused.
    await expect(database.query('CREATE ROLE intruder SUPERUSER')).rejects.toThrow(/permission denied/);
    expect(existsSync(join(server.home, 'shop-password'))).toBe(true);
    expect(statSync(join(server.home, 'shop-password')).mode & 0o777).toBe(0o600);
  });
});
