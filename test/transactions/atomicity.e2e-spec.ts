import { INestApplication, Injectable } from '@nestjs/common';
import { DelayContext, DelayService, OnDelayExpired, TransactionNotActiveError } from 'nestjs-delay';
import { Client } from 'pg';
import { bootDelayApp, pollUntil, sleep } from '../conformance/support/driver-fixture';
import { TestPostgresServer } from '../support/postgres-server';
import { NATIVE_TABLE, NATIVE_TABLE_DDL, ORM_TRANSACTIONS, OrmConnection } from './support/orm-transactions';

const TOPIC = 'order.unpaid';

@Injectable()
class Fired {
  readonly runs: Array<{ key: string; payload: unknown }> = [];

  @OnDelayExpired(TOPIC)
  onUnpaid(context: DelayContext): void {
    this.runs.push({ key: context.key, payload: context.payload });
  }

  of(key: string): number {
    return this.runs.filter((run) => run.key === key).length;
  }
}

/**
 * The promise of the postgres driver, through every client an app may hold
 * its transaction with: the domain row and its delayed action commit
 * together or not at all. Each client opens real transactions of its own on
 * the suite's PostgreSQL; the driver is the real one, consuming in this
 * process, and a second connection LISTENs to see who would be woken.
 */
describe.each(ORM_TRANSACTIONS.map((kind) => [kind.name, kind] as const))('atomic with the domain write, through %s', (_name, kind) => {
  let server: TestPostgresServer;
  let orm: OrmConnection;
  let app: INestApplication;
  let delay: DelayService;
  let fired: Fired;
  let listener: Client;
  const notifications: string[] = [];
  const schema = `atomic_${kind.adapter.replace(/\W/g, '_')}_${process.pid}`.toLowerCase().slice(0, 60);

  beforeAll(async () => {
    server = await TestPostgresServer.start();
    orm = await kind.connect(server.url);
    await orm.query(NATIVE_TABLE_DDL);
    app = await bootDelayApp({ driver: { type: 'postgres', connectionString: server.url, schema }, shutdownTimeout: '1s' }, [Fired]);
    delay = app.get(DelayService);
    fired = app.get(Fired);
    listener = new Client({ connectionString: server.url });
    await listener.connect();
    listener.on('notification', (message) => notifications.push(message.payload ?? ''));
    await listener.query(`LISTEN ${schema}`);
  }, 120_000);

  afterAll(async () => {
    await listener?.end();
    await app?.close();
    await orm?.close();
    await server?.dispose();
  });

  const rows = async (value: string): Promise<number> => (await orm.query(`SELECT count(*)::int AS n FROM ${NATIVE_TABLE} WHERE v = $1`, [value]))[0].n as number;

  it('commit: the row and the action are both there, and the action fires once', async () => {
    notifications.length = 0;
    await orm.transaction(async (tx) => {
      await orm.native.insert(tx, 'order-c');
      await delay.schedule(TOPIC, 'order-c', { delay: 200, payload: { total: 12 }, transaction: tx });
      // Nothing is visible outside the transaction before it commits.
      expect(await delay.get(TOPIC, 'order-c')).toBeNull();
    }, 'commit');
    expect(await rows('order-c')).toBe(1);
    expect(await delay.get(TOPIC, 'order-c')).toMatchObject({ payload: { total: 12 } });
    await pollUntil(() => fired.of('order-c') > 0, 'the committed action', 5_000);
    await sleep(300);
    expect(fired.of('order-c')).toBe(1);
    // The topic's tag (see wake_tag in the migrations).
    const [{ tag }] = (await listener.query(`SELECT ${schema}.wake_tag($1) AS tag`, [TOPIC])).rows;
    expect(notifications).toContain(tag);
  });

  it('rollback: neither the row nor the action is stored, nothing fires, and no instance is woken', async () => {
    notifications.length = 0;
    await orm.transaction(async (tx) => {
      await orm.native.insert(tx, 'order-r');
      await delay.schedule(TOPIC, 'order-r', { delay: 50, transaction: tx });
      await delay.scheduleMany(TOPIC, [{ key: 'order-r2', delay: 60 }], { transaction: tx });
    }, 'rollback');
    await sleep(400);
    expect(await rows('order-r')).toBe(0);
    expect(await delay.get(TOPIC, 'order-r')).toBeNull();
    expect(await delay.get(TOPIC, 'order-r2')).toBeNull();
    expect(fired.of('order-r') + fired.of('order-r2')).toBe(0);
    expect(notifications).toEqual([]);
  });

  it('a cancel in a transaction that rolls back leaves the action to fire', async () => {
    await delay.schedule(TOPIC, 'order-k', { delay: 400, payload: 'kept' });
    await orm.transaction(async (tx) => {
      expect(await delay.cancel(TOPIC, 'order-k', { transaction: tx })).toBe(true);
    }, 'rollback');
    expect(await delay.get(TOPIC, 'order-k')).toMatchObject({ payload: 'kept' });
    await pollUntil(() => fired.of('order-k') > 0, 'the action whose cancel rolled back', 5_000);
    expect(fired.of('order-k')).toBe(1);
  });

  it.each(['commit', 'rollback'] as const)('a transaction object used after its %s is refused with TransactionNotActiveError, and nothing is written', async (end) => {
    const key = `order-late-${end}`;
    await delay.schedule(TOPIC, `${key}-kept`, { delay: 60_000, payload: 'kept' });
    const ended = await orm.transaction(async (tx) => tx, end);
    const refused = async (write: Promise<unknown>): Promise<void> => {
      const error = await write.then(() => undefined, (rejected: unknown) => rejected);
      expect(error).toBeInstanceOf(TransactionNotActiveError);
    };
    await refused(delay.schedule(TOPIC, key, { delay: 60_000, transaction: ended }));
    await refused(delay.scheduleMany(TOPIC, [{ key: `${key}-2`, delay: 60_000 }], { transaction: ended }));
    await refused(delay.cancel(TOPIC, `${key}-kept`, { transaction: ended }));
    await refused(delay.reschedule(TOPIC, `${key}-kept`, { delay: 10, transaction: ended }));
    await refused(delay.collect(TOPIC, `${key}-batch`, 1, { window: 60_000, transaction: ended }));
    expect(await delay.get(TOPIC, key)).toBeNull();
    expect(await delay.get(TOPIC, `${key}-2`)).toBeNull();
    expect(await delay.get(TOPIC, `${key}-batch`)).toBeNull();
    expect((await delay.get(TOPIC, `${key}-kept`))?.dueAt.getTime()).toBeGreaterThan(Date.now() + 30_000);
    await delay.cancel(TOPIC, `${key}-kept`);
  });

  it('a committed cancel and reschedule take effect with the domain write', async () => {
    await delay.schedule(TOPIC, 'order-p', { delay: 300 });
    await delay.schedule(TOPIC, 'order-m', { delay: 60_000, payload: 'moved' });
    await orm.transaction(async (tx) => {
      await orm.native.insert(tx, 'order-p paid');
      expect(await delay.cancel(TOPIC, 'order-p', { transaction: tx })).toBe(true);
      expect(await delay.reschedule(TOPIC, 'order-m', { delay: 100, transaction: tx })).toMatchObject({ payload: 'moved' });
    }, 'commit');
    await pollUntil(() => fired.of('order-m') > 0, 'the moved action', 5_000);
    await sleep(500);
    expect(fired.of('order-p')).toBe(0);
    expect(fired.of('order-m')).toBe(1);
  });
});
