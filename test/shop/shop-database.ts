import { randomUUID } from 'node:crypto';
import { TestPostgresServer } from '../support/postgres-server';

/**
 * The shop's data lives in PostgreSQL: each test file gets one server of
 * its own (TestPostgresServer: a free port and a temporary folder, or a
 * database of its own on TEST_DATABASE_URL), started on first use and
 * stopped after the file's tests, and each shop a fresh database on it, so
 * no test sees another's orders or stock.
 */
let server: Promise<TestPostgresServer> | undefined;
const created: string[] = [];

// Started before the file's first test, with a bound of its own: initdb and a first boot take seconds on a busy machine.
beforeAll(async () => {
  await shopPostgres();
}, 60_000);

afterAll(async () => {
  const started = server;
  server = undefined;
  if (!started) return;
  const postgres = await started;
  // On a server of the suite's own, dispose() deletes everything; on TEST_DATABASE_URL, the databases are dropped one by one.
  for (const name of created.splice(0)) await postgres.admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
  await postgres.dispose();
}, 30_000);

/** This file's PostgreSQL server, started on first use. */
export function shopPostgres(): Promise<TestPostgresServer> {
  server ??= TestPostgresServer.start();
  return server;
}

/** A new, empty database on this file's server, as a DATABASE_URL: the shop's migrations create its tables. */
export async function freshShopDatabase(): Promise<string> {
  const postgres = await shopPostgres();
  const name = `shop_${randomUUID().replace(/-/g, '')}`;
  await postgres.admin(`CREATE DATABASE ${name}`);
  created.push(name);
  const url = new URL(postgres.url);
  url.pathname = `/${name}`;
  return url.href;
}
