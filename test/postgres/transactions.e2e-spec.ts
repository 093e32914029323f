import { INestApplication, Injectable } from '@nestjs/common';
import { DelayContext, DelayService, DelayTransactionAdapter, OnDelayExpired, OnRecurring, SqlRows, UnsupportedTransactionClientError } from 'nestjs-delay';
import { Client, Pool, PoolClient } from 'pg';
import { DataSource } from 'typeorm';
import { PostgresDriver } from '../../libs/delay/src/drivers/postgres/postgres.driver';
import { bootDelayApp, pollUntil, sleep } from '../conformance/support/driver-fixture';
import { TestPostgresServer } from '../support/postgres-server';
import { REAL_TIME_ON_TIME_MS } from '../support/on-time';

const TOPIC = 'tx.order';
const DIGEST = 'tx.digest';

@Injectable()
class Handlers {
  readonly fired: Array<{ key: string; payload: unknown }> = [];

  @OnDelayExpired(TOPIC)
  onOrder(context: DelayContext): void {
    this.fired.push({ key: context.key, payload: context.payload });
  }

  @OnRecurring(DIGEST)
  onDigest(): void {}
}

/** The test's own transaction object: a pg client inside BEGIN, run through an adapter of the test's (the built-in ones are not needed). */
class TestTransaction {
  constructor(readonly client: PoolClient) {}
}

const adapter: DelayTransactionAdapter<TestTransaction> = {
  name: 'test-pg',
  matches: (transaction): transaction is TestTransaction => transaction instanceof TestTransaction,
  query: async (transaction, sql, params): Promise<SqlRows> => (await transaction.client.query(sql, params as unknown[])).rows,
};

/** A transaction whose client fails every statement itself, with `error`. */
class FailingTransaction {
  constructor(readonly error: Error) {}
}

const failingAdapter: DelayTransactionAdapter<FailingTransaction> = {
  name: 'test-failing',
  matches: (transaction): transaction is FailingTransaction => transaction instanceof FailingTransaction,
  query: async (transaction): Promise<SqlRows> => {
    throw transaction.error;
  },
};

/**
 * Writes inside the application's transaction, through a plain pg client
 * in BEGIN ... COMMIT / ROLLBACK: the action exists if and only if the
 * transaction commits, a rolled-back write wakes no one, and a transaction
 * no longer open is refused instead of writing on its own.
 */
describe('postgres: writes inside the application transaction', () => {
  let server: TestPostgresServer;
  let pool: Pool;
  let listener: Client;
  let app: INestApplication;
  let delay: DelayService;
  let handlers: Handlers;
  let schemas = 0;
  let schema: string;
  const notifications: string[] = [];

  beforeAll(async () => {
    server = await TestPostgresServer.start();
    pool = new Pool({ connectionString: server.url, max: 4 });
  }, 60_000);

  afterAll(async () => {
    await pool.end();
    await server.dispose();
  });

  beforeEach(async () => {
    schema = `tx_${process.pid}_${++schemas}`;
    app = await bootDelayApp({ driver: { type: 'postgres', connectionString: server.url, schema }, transactions: { adapters: [adapter, failingAdapter] }, shutdownTimeout: '1s' }, [Handlers]);
    delay = app.get(DelayService);
    handlers = app.get(Handlers);
    notifications.length = 0;
    listener = new Client({ connectionString: server.url });
    await listener.connect();
    listener.on('notification', (message) => notifications.push(message.payload ?? ''));
    await listener.query(`LISTEN ${schema}`);
  });

  afterEach(async () => {
    await listener.end();
    await app.close();
  });

  async function inTransaction<T>(work: (transaction: TestTransaction) => Promise<T>, end: 'COMMIT' | 'ROLLBACK'): Promise<T> {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      // The application's own write, so the action and the domain row share the transaction.
      await client.query('SELECT 1');
      const result = await work(new TestTransaction(client));
      await client.query(end);
      return result;
    } finally {
      client.release();
    }
  }

  it('commit: the action is stored when the transaction commits, not before, and fires once', async () => {
    const client = await pool.connect();
    await client.query('BEGIN');
    const pending = await delay.schedule(TOPIC, 'o-1', { delay: 150, payload: { total: 5 }, transaction: new TestTransaction(client) });
    expect(pending).toMatchObject({ key: 'o-1', payload: { total: 5 }, state: 'waiting' });
    // Not visible outside the transaction yet.
    expect(await delay.get(TOPIC, 'o-1')).toBeNull();
    await client.query('COMMIT');
    client.release();
    expect(await delay.get(TOPIC, 'o-1')).toMatchObject({ payload: { total: 5 } });
    await pollUntil(() => handlers.fired.length > 0, 'the run', 3_000);
    await sleep(300);
    expect(handlers.fired).toEqual([{ key: 'o-1', payload: { total: 5 } }]);
    // One notification, with the topic's tag (see wake_tag in the migrations).
    expect(notifications).toEqual([expect.stringMatching(/^[0-9a-f]{16}$/)]);
  });

  it('rollback: nothing is stored, nothing fires, and no one is woken', async () => {
    await inTransaction(async (transaction) => {
      await delay.schedule(TOPIC, 'o-2', { delay: 50, transaction });
      await delay.scheduleMany(TOPIC, [{ key: 'o-3', delay: 50 }, { key: 'o-4', delay: 60 }], { transaction });
      await delay.collect(TOPIC, 'o-5', { line: 1 }, { window: 50, transaction });
    }, 'ROLLBACK');
    await sleep(400);
    expect(await delay.count(TOPIC)).toBe(0);
    expect(handlers.fired).toEqual([]);
    expect(notifications).toEqual([]);
  });

  it('a cancel that is rolled back changes nothing: the action still fires', async () => {
    await delay.schedule(TOPIC, 'o-6', { delay: 300, payload: 'kept' });
    const cancelled = await inTransaction((transaction) => delay.cancel(TOPIC, 'o-6', { transaction }), 'ROLLBACK');
    expect(cancelled).toBe(true);
    expect(await delay.get(TOPIC, 'o-6')).toMatchObject({ payload: 'kept' });
    await pollUntil(() => handlers.fired.length > 0, 'the run', 3_000);
    expect(handlers.fired).toEqual([{ key: 'o-6', payload: 'kept' }]);
  });

  it('a committed cancel and reschedule take effect with the transaction', async () => {
    await delay.schedule(TOPIC, 'o-7', { delay: 200 });
    await delay.schedule(TOPIC, 'o-8', { delay: 60_000, payload: 'moved' });
    await inTransaction(async (transaction) => {
      expect(await delay.cancel(TOPIC, 'o-7', { transaction })).toBe(true);
      expect(await delay.reschedule(TOPIC, 'o-8', { delay: 100, transaction })).toMatchObject({ payload: 'moved' });
    }, 'COMMIT');
    await pollUntil(() => handlers.fired.length > 0, 'the moved run', 3_000);
    await sleep(300);
    expect(handlers.fired).toEqual([{ key: 'o-8', payload: 'moved' }]);
  });

  it('refuses a transaction that is over (committed) or aborted, and writes nothing', async () => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('COMMIT');
      // The client is back in autocommit: a write through it would commit on its own.
      await expect(delay.schedule(TOPIC, 'late', { delay: 50, transaction: new TestTransaction(client) })).rejects.toMatchObject({ code: 'ERR_DELAY_TRANSACTION_NOT_ACTIVE' });
      await delay.schedule(TOPIC, 'kept', { delay: 60_000 });
      await expect(delay.cancel(TOPIC, 'kept', { transaction: new TestTransaction(client) })).rejects.toMatchObject({ code: 'ERR_DELAY_TRANSACTION_NOT_ACTIVE' });
      await expect(delay.reschedule(TOPIC, 'kept', { delay: 10, transaction: new TestTransaction(client) })).rejects.toMatchObject({ code: 'ERR_DELAY_TRANSACTION_NOT_ACTIVE' });
      await expect(delay.scheduleMany(TOPIC, [{ key: 'late-2', delay: 50 }], { transaction: new TestTransaction(client) })).rejects.toMatchObject({ code: 'ERR_DELAY_TRANSACTION_NOT_ACTIVE' });
      await expect(delay.collect(TOPIC, 'late', 1, { window: 50, transaction: new TestTransaction(client) })).rejects.toMatchObject({ code: 'ERR_DELAY_TRANSACTION_NOT_ACTIVE' });

      await client.query('BEGIN');
      await client.query('SELECT 1/0').catch(() => undefined);
      await expect(delay.schedule(TOPIC, 'late', { delay: 50, transaction: new TestTransaction(client) })).rejects.toMatchObject({ code: 'ERR_DELAY_TRANSACTION_NOT_ACTIVE' });
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    // Only the action scheduled outside any transaction: the refused cancel and reschedule changed nothing.
    expect((await delay.list(TOPIC)).items.map((action) => [action.key, action.dueAt.getTime() > Date.now() + 30_000])).toEqual([['kept', true]]);
    await sleep(200);
    expect(handlers.fired).toEqual([]);
  });

  it("an error the client raises itself, without a SQLSTATE and not about the connection, is rethrown as it is, not as DriverUnavailableError", async () => {
    const own = new Error('the client refused the statement');
    const refusals = [
      delay.schedule(TOPIC, 'client-error', { delay: 50, transaction: new FailingTransaction(own) }),
      delay.cancel(TOPIC, 'client-error', { transaction: new FailingTransaction(own) }),
      delay.collect(TOPIC, 'client-error', 1, { window: 50, transaction: new FailingTransaction(own) }),
    ];
    for (const refusal of refusals) await expect(refusal).rejects.toBe(own);
    // An adapter's own typed refusal (a built-in one's, for an answer it cannot read), as it is.
    const unreadable = new UnsupportedTransactionClientError('test-failing', 'a statement resolved string, not rows nor { rows }');
    await expect(delay.schedule(TOPIC, 'client-error', { delay: 50, transaction: new FailingTransaction(unreadable) })).rejects.toBe(unreadable);
    // A connection lost is still DriverUnavailableError.
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', errno: -104, syscall: 'read' });
    await expect(delay.schedule(TOPIC, 'client-error', { delay: 50, transaction: new FailingTransaction(reset) })).rejects.toMatchObject({
      code: 'ERR_DELAY_DRIVER_UNAVAILABLE',
    });
    expect(await delay.count(TOPIC)).toBe(0);
  });

  it("refuses a transaction of another database, one with the driver's schema too, and writes nothing there; the driver's own database still takes its transactions", async () => {
    const database = `other_${process.pid}_${schemas}`;
    const otherUrl = await server.createDatabase(database);
    const other = new Pool({ connectionString: otherUrl, max: 2 });
    const otherTypeOrm = new DataSource({ type: 'postgres', url: otherUrl, poolSize: 2 });
    const ownTypeOrm = new DataSource({ type: 'postgres', url: server.url, poolSize: 2 });
    try {
      // A database without the driver's schema: refused as well.
      const bare = await other.connect();
      try {
        await bare.query('BEGIN');
        await expect(delay.schedule(TOPIC, 'elsewhere', { delay: 50, transaction: bare })).rejects.toBeInstanceOf(UnsupportedTransactionClientError);
        await bare.query('ROLLBACK');
      } finally {
        bare.release();
      }
      // Another application's driver, or a copy: the same schema, its functions and tables, and its own store id.
      const elsewhere = new PostgresDriver({ type: 'postgres', connectionString: otherUrl, schema });
      await elsewhere.connect();
      await elsewhere.close();
      await delay.schedule(TOPIC, 'kept', { delay: 60_000 });
      await delay.collect(TOPIC, 'kept-batch', 1, { window: 60_000 });

      const client = await other.connect();
      try {
        const writes: Array<(transaction: PoolClient) => Promise<unknown>> = [
          (transaction) => delay.schedule(TOPIC, 'elsewhere', { delay: 50, transaction }),
          (transaction) => delay.scheduleMany(TOPIC, [{ key: 'elsewhere-2', delay: 50 }], { transaction }),
          (transaction) => delay.cancel(TOPIC, 'kept', { transaction }),
          (transaction) => delay.reschedule(TOPIC, 'kept', { delay: 10, transaction }),
          (transaction) => delay.collect(TOPIC, 'kept-batch', 2, { window: 50, transaction }),
          (transaction) => delay.upsertRecurring(DIGEST, 'm-1', { every: '1h', transaction }),
          (transaction) => delay.removeRecurring(DIGEST, 'm-1', { transaction }),
        ];
        for (const write of writes) {
          await client.query('BEGIN');
          await expect(write(client)).rejects.toMatchObject({ code: 'ERR_DELAY_UNSUPPORTED_TRANSACTION_CLIENT', message: /another database than the driver's/ });
          // The refusal aborted the transaction: its COMMIT rolls back.
          await client.query('COMMIT');
        }
      } finally {
        client.release();
      }
      await otherTypeOrm.initialize();
      await expect(otherTypeOrm.transaction((manager) => delay.schedule(TOPIC, 'elsewhere-typeorm', { delay: 50, transaction: manager }))).rejects.toBeInstanceOf(
        UnsupportedTransactionClientError,
      );
      const { rows } = await other.query(`SELECT (SELECT count(*)::int FROM ${schema}.actions) AS actions, (SELECT count(*)::int FROM ${schema}.series) AS series`);
      expect(rows).toEqual([{ actions: 0, series: 0 }]);
      expect(await delay.get(TOPIC, 'kept')).toMatchObject({ key: 'kept' });
      expect(await delay.get(TOPIC, 'kept-batch')).toMatchObject({ items: [1] });

      // The driver's own database: a pg client and a TypeORM transaction of it are taken.
      await inTransaction((transaction) => delay.schedule(TOPIC, 'here', { delay: 60_000, transaction: transaction.client }), 'COMMIT');
      await ownTypeOrm.initialize();
      await ownTypeOrm.transaction((manager) => delay.schedule(TOPIC, 'here-typeorm', { delay: 60_000, transaction: manager }));
      expect((await delay.list(TOPIC)).items.map((action) => action.key).sort()).toEqual(['here', 'here-typeorm', 'kept', 'kept-batch']);
      expect(handlers.fired).toEqual([]);
    } finally {
      if (otherTypeOrm.isInitialized) await otherTypeOrm.destroy();
      if (ownTypeOrm.isInitialized) await ownTypeOrm.destroy();
      await other.end();
      await server.dropDatabase(database);
    }
  });

  it('the first statement of a transaction is accepted (the guard tells it from autocommit)', async () => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await delay.schedule(TOPIC, 'first', { delay: 60_000, transaction: new TestTransaction(client) });
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    expect(await delay.count(TOPIC)).toBe(1);
  });

  it('keys, payloads and items that look like SQL or escapes arrive as given', async () => {
    const key = "it's \\ $1 '' ; -- ü 😀 \"q\"";
    const payload = { text: "O'Brien \\n $2 --", nested: ["\\'", '😀'], n: -5 };
    // Due 1.5 s after the writes: read back before they run, on a busy machine too.
    await inTransaction(async (transaction) => {
      await delay.schedule(TOPIC, key, { delay: 1_500, payload, transaction });
      await delay.collect(TOPIC, `${key}-batch`, { line: "a'b\\c" }, { window: 1_500, transaction });
      await delay.collect(TOPIC, `${key}-batch`, "$1 $2 ''", { window: 1_500, transaction });
    }, 'COMMIT');
    expect(await delay.get(TOPIC, key)).toMatchObject({ key, payload });
    expect(await delay.get(TOPIC, `${key}-batch`)).toMatchObject({ items: [{ line: "a'b\\c" }, "$1 $2 ''"] });
    await pollUntil(() => handlers.fired.length === 2, 'both runs', 1_500 + REAL_TIME_ON_TIME_MS + 1_000);
    expect(handlers.fired.find((run) => run.key === key)).toEqual({ key, payload });
  });

  it('many writes in one transaction use no savepoint and commit together', async () => {
    await inTransaction(async (transaction) => {
      for (let n = 0; n < 100; n++) await delay.schedule(TOPIC, `bulk-${n}`, { delay: 60_000, transaction });
    }, 'COMMIT');
    expect(await delay.count(TOPIC)).toBe(100);
  });
});
