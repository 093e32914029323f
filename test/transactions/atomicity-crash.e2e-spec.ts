import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { INestApplication, Injectable } from '@nestjs/common';
import { DelayService, OnDelayExpired } from 'nestjs-delay';
import { bootDelayApp, pollUntil } from '../conformance/support/driver-fixture';
import { registerHook } from '../instances/support/instances';
import { TestPostgresServer } from '../support/postgres-server';

const REPO_ROOT = resolve(__dirname, '..', '..');
const WORKER = join(__dirname, 'support', 'mid-transaction.worker.ts');

@Injectable()
class Unpaid {
  @OnDelayExpired('order.unpaid')
  cancel(): void {
    // Only counted by the store: nothing is due within the test.
  }
}

/**
 * kill -9 of a process between its domain insert (and its schedule, in the
 * same transaction) and its commit: the server rolls the transaction back
 * when the connection dies, so neither the order nor its timer is left.
 */
describe('kill -9 inside the application transaction (postgres driver)', () => {
  let server: TestPostgresServer;
  let app: INestApplication;
  const schema = `crash_${process.pid}`;

  beforeAll(async () => {
    server = await TestPostgresServer.start();
    await server.admin('CREATE TABLE orders (id text PRIMARY KEY)', [], true);
    app = await bootDelayApp({ driver: { type: 'postgres', connectionString: server.url, schema } }, [Unpaid]);
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await server?.dispose();
  });

  it('leaves neither the row nor the action', async () => {
    const key = 'o-killed';
    const child = spawn(process.execPath, ['--require', registerHook(), WORKER], {
      cwd: REPO_ROOT,
      env: { ...process.env, NESTJS_DELAY_ROOT: REPO_ROOT, MID_TRANSACTION: JSON.stringify({ url: server.url, schema, key }) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    const message = await new Promise<{ type: string; error?: string }>((done, fail) => {
      child.once('message', (value) => done(value as { type: string }));
      child.once('exit', (code) => fail(new Error(`worker exited with ${code} before its transaction was open`)));
    });
    expect(message).toEqual({ type: 'in-transaction' });

    // While the transaction is open, its row and action are there for it and invisible to everyone else.
    const delay = app.get(DelayService);
    expect(await delay.get('order.unpaid', key)).toBeNull();
    const open = await server.admin(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'idle in transaction' AND datname = current_database()`, [], true);
    expect(open[0].n).toBeGreaterThanOrEqual(1);

    child.kill('SIGKILL');
    await exited;
    // The server notices the dead connection and rolls its transaction back.
    await pollUntil(
      async () => (await server.admin(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE state LIKE 'idle in transaction%' AND datname = current_database()`, [], true))[0].n === 0,
      'the rollback of the killed process transaction',
      10_000,
      50,
    );
    expect(await server.admin('SELECT id FROM orders', [], true)).toEqual([]);
    expect(await delay.get('order.unpaid', key)).toBeNull();
    expect(await delay.count('order.unpaid')).toBe(0);
  }, 60_000);
});
