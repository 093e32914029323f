import { createHash } from 'node:crypto';
import { Transactional, TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { INestApplication, Injectable } from '@nestjs/common';
import { DelayContext, DelayService, OnRecurring, TransactionNotActiveError } from 'nestjs-delay';
import { Client, Pool, PoolClient } from 'pg';
import { bootDelayApp, pollUntil, sleep } from '../conformance/support/driver-fixture';
import { TestPostgresServer } from '../support/postgres-server';
import { bootClsTypeOrmApp } from './support/cls-typeorm-app';

jest.setTimeout(60_000);

/** One topic per case, so one case's schedules never wake or fire in another's counts. */
const COMMITTED = 'digest.committed';
const ROLLED_BACK = 'digest.rolled-back';
const OWN_WRITES = 'digest.own-writes';
const REMOVED = 'digest.removed';
const AMBIENT = 'digest.ambient';

/** Counts the occurrences run, per schedule key (an occurrence's key is its schedule's key, U+001E and its time). */
@Injectable()
class Digests {
  readonly fired = new Map<string, number>();

  count(key: string): number {
    return this.fired.get(key) ?? 0;
  }

  private record({ key }: DelayContext): void {
    const series = key.split('\u001e')[0];
    this.fired.set(series, this.count(series) + 1);
  }

  @OnRecurring(COMMITTED)
  committed(context: DelayContext): void {
    this.record(context);
  }

  @OnRecurring(ROLLED_BACK)
  rolledBack(context: DelayContext): void {
    this.record(context);
  }

  @OnRecurring(OWN_WRITES)
  ownWrites(context: DelayContext): void {
    this.record(context);
  }

  @OnRecurring(REMOVED)
  removed(context: DelayContext): void {
    this.record(context);
  }
}

/** The wake-ups a schema's channel carries ("<topic> <due ms>"), counted per topic as they arrive. */
class WakeUps {
  private readonly seen = new Map<string, number>();
  private storeId = '';
  private constructor(private readonly client: Client) {}

  static async listen(url: string, channel: string): Promise<WakeUps> {
    const client = new Client({ connectionString: url });
    await client.connect();
    const wakeUps = new WakeUps(client);
    // A notification names its topic by a tag (see wake_tag in the migrations): counted by tag, looked up by topic.
    client.on('notification', ({ payload }) => {
      wakeUps.seen.set(payload ?? '', (wakeUps.seen.get(payload ?? '') ?? 0) + 1);
    });
    wakeUps.storeId = String((await client.query(`SELECT ${channel}.store_id() AS id`)).rows[0].id);
    await client.query(`LISTEN ${channel}`);
    return wakeUps;
  }

  of(topic: string): number {
    const tag = createHash('md5').update(this.storeId + topic).digest('hex').slice(0, 16);
    return this.seen.get(tag) ?? 0;
  }

  close(): Promise<void> {
    return this.client.end();
  }
}

/**
 * The recurring writes (upsertRecurring, removeRecurring, pauseRecurring,
 * resumeRecurring, runRecurringNow) inside the application's transaction
 * on the real postgres driver, with a `pg` client on which the application
 * ran BEGIN: the schedule exists, wakes consumers and fires only once that
 * transaction commits; a rollback leaves no tick, no series row, no
 * wake-up and nothing firing; the read each write makes first sees the
 * transaction's own earlier writes.
 */
describe('recurring writes inside a pg client transaction (postgres driver)', () => {
  const SCHEMA = 'rec_tx';
  let server: TestPostgresServer;
  let app: INestApplication;
  let delay: DelayService;
  let digests: Digests;
  let pool: Pool;
  let wakeUps: WakeUps;

  beforeAll(async () => {
    server = await TestPostgresServer.start();
    app = await bootDelayApp({ driver: { type: 'postgres', connectionString: server.url, schema: SCHEMA }, shutdownTimeout: '1s' }, [Digests]);
    delay = app.get(DelayService);
    digests = app.get(Digests);
    pool = new Pool({ connectionString: server.url, max: 4 });
    wakeUps = await WakeUps.listen(server.url, SCHEMA);
  });
  afterAll(async () => {
    await app?.close();
    await wakeUps?.close();
    await pool?.end();
    await server?.dispose();
  });

  /** Runs `work` between BEGIN and COMMIT or ROLLBACK on one client of the application's pool. */
  async function inTransaction<T>(end: 'commit' | 'rollback', work: (tx: PoolClient) => Promise<T>): Promise<T> {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query(end === 'commit' ? 'COMMIT' : 'ROLLBACK');
      return result;
    } finally {
      client.release();
    }
  }

  /** The rows a topic has in the driver's tables: ticks and occurrences, and series bookkeeping. */
  async function rowsOf(topic: string): Promise<{ actions: number; series: number }> {
    const [row] = await server.admin(
      `SELECT (SELECT count(*)::int FROM ${SCHEMA}.actions WHERE topic = $1) AS actions, (SELECT count(*)::int FROM ${SCHEMA}.series WHERE topic = $1) AS series`,
      [topic],
      true,
    );
    return { actions: Number(row.actions), series: Number(row.series) };
  }

  it('committed: invisible and silent until the commit, then the schedule exists, wakes the consumer and fires', async () => {
    const before = wakeUps.of(COMMITTED);
    await inTransaction('commit', async (tx) => {
      const schedule = await delay.upsertRecurring(COMMITTED, 'm-1', { every: '1s', payload: { merchant: 'm-1' }, transaction: tx });
      expect(schedule).toMatchObject({ topic: COMMITTED, key: 'm-1', paused: false, payload: { merchant: 'm-1' } });
      expect(await delay.getRecurring(COMMITTED, 'm-1')).toBeNull();
      expect(await rowsOf(COMMITTED)).toEqual({ actions: 0, series: 0 });
      await sleep(1_200);
      expect(wakeUps.of(COMMITTED)).toBe(before);
      expect(digests.count('m-1')).toBe(0);
    });
    await pollUntil(() => wakeUps.of(COMMITTED) > before, 'the wake-up at commit', 5_000);
    expect(await delay.getRecurring(COMMITTED, 'm-1')).toMatchObject({ recurrence: { every: 1000 }, payload: { merchant: 'm-1' } });
    await pollUntil(() => digests.count('m-1') >= 2, 'two occurrences of the committed schedule', 10_000);
    await delay.removeRecurring(COMMITTED, 'm-1');
  });

  it('rolled back: no schedule, no tick, no series row, no wake-up, nothing fires', async () => {
    const before = wakeUps.of(ROLLED_BACK);
    await inTransaction('rollback', async (tx) => {
      await delay.upsertRecurring(ROLLED_BACK, 'm-2', { every: '1s', transaction: tx });
      // The extra run is written too (an occurrence due now), and goes with the rollback.
      expect(await delay.runRecurringNow(ROLLED_BACK, 'm-2', { transaction: tx })).toBe(true);
    });
    expect(await delay.getRecurring(ROLLED_BACK, 'm-2')).toBeNull();
    expect(await rowsOf(ROLLED_BACK)).toEqual({ actions: 0, series: 0 });
    await sleep(2_000);
    expect(digests.count('m-2')).toBe(0);
    expect(wakeUps.of(ROLLED_BACK)).toBe(before);
  });

  it("each write reads the schedule inside the transaction: it sees the transaction's own earlier writes", async () => {
    await inTransaction('commit', async (tx) => {
      await delay.upsertRecurring(OWN_WRITES, 'm-3', { every: '1h', transaction: tx });
      expect(await delay.upsertRecurring(OWN_WRITES, 'm-3', { every: '2h', overlap: 'allow', transaction: tx })).toMatchObject({ recurrence: { every: 7_200_000 }, overlap: 'allow' });
      expect(await delay.pauseRecurring(OWN_WRITES, 'm-3', { transaction: tx })).toBe(true);
      expect(await delay.pauseRecurring(OWN_WRITES, 'm-3', { transaction: tx })).toBe(false);
      expect(await delay.getRecurring(OWN_WRITES, 'm-3')).toBeNull();
    });
    expect(await delay.getRecurring(OWN_WRITES, 'm-3')).toMatchObject({ recurrence: { every: 7_200_000 }, overlap: 'allow', paused: true, nextRunAt: null });
    await inTransaction('rollback', async (tx) => {
      expect(await delay.resumeRecurring(OWN_WRITES, 'm-3', { transaction: tx })).toBe(true);
      expect(await delay.removeRecurring(OWN_WRITES, 'm-3', { transaction: tx })).toBe(true);
      expect(await delay.removeRecurring(OWN_WRITES, 'm-3', { transaction: tx })).toBe(false);
    });
    expect(await delay.getRecurring(OWN_WRITES, 'm-3')).toMatchObject({ paused: true });
    expect(await delay.removeRecurring(OWN_WRITES, 'm-3')).toBe(true);
  });

  it('removed in a transaction that rolls back, it goes on firing; removed in one that commits, it stops', async () => {
    await delay.upsertRecurring(REMOVED, 'm-4', { every: '1s' });
    await pollUntil(() => digests.count('m-4') >= 1, 'the first occurrence', 10_000);
    await inTransaction('rollback', async (tx) => {
      expect(await delay.removeRecurring(REMOVED, 'm-4', { transaction: tx })).toBe(true);
      expect(await delay.pauseRecurring(REMOVED, 'm-4', { transaction: tx })).toBe(false);
    });
    expect(await delay.getRecurring(REMOVED, 'm-4')).toMatchObject({ paused: false });
    const fired = digests.count('m-4');
    await pollUntil(() => digests.count('m-4') >= fired + 2, 'two more occurrences after the rollback', 10_000);
    await inTransaction('commit', async (tx) => {
      expect(await delay.removeRecurring(REMOVED, 'm-4', { transaction: tx })).toBe(true);
    });
    expect(await delay.getRecurring(REMOVED, 'm-4')).toBeNull();
  });

  it('a client outside any transaction is refused by the guard, and the write is undone', async () => {
    const client = await pool.connect();
    try {
      await expect(delay.upsertRecurring(ROLLED_BACK, 'm-5', { every: '1h', transaction: client })).rejects.toBeInstanceOf(TransactionNotActiveError);
    } finally {
      client.release();
    }
    expect(await delay.getRecurring(ROLLED_BACK, 'm-5')).toBeNull();
    expect(await rowsOf(ROLLED_BACK)).toEqual({ actions: 0, series: 0 });
  });
});

class MerchantRefused extends Error {}

/** An application's service: the merchant row and its schedule in one @Transactional() method, no transaction object in sight. */
@Injectable()
class Merchants {
  readonly fired: string[] = [];

  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly delay: DelayService,
  ) {}

  @Transactional()
  async create(id: string, fail = false): Promise<void> {
    await this.txHost.tx.query('INSERT INTO merchants (id) VALUES ($1)', [id]);
    await this.delay.upsertRecurring(AMBIENT, id, { every: '1s' });
    if (fail) throw new MerchantRefused(id);
  }

  @Transactional()
  async close(id: string, fail = false): Promise<void> {
    await this.txHost.tx.query('DELETE FROM merchants WHERE id = $1', [id]);
    await this.delay.removeRecurring(AMBIENT, id);
    if (fail) throw new MerchantRefused(id);
  }

  /** A write that opts out of the ambient transaction: it stays whatever the method does. */
  @Transactional()
  async createOutside(id: string): Promise<void> {
    await this.delay.upsertRecurring(AMBIENT, id, { every: '1h', transaction: null });
    throw new MerchantRefused(id);
  }

  @OnRecurring(AMBIENT)
  run({ key }: DelayContext): void {
    this.fired.push(key.split('\u001e')[0]);
  }
}

/** The ambient transaction of @nestjs-cls/transactional (TypeORM): the recurring writes join it as schedule and cancel do. */
describe('recurring writes in the ambient @Transactional() transaction (postgres driver)', () => {
  let server: TestPostgresServer;
  let app: INestApplication;
  let merchants: Merchants;
  let delay: DelayService;

  beforeAll(async () => {
    server = await TestPostgresServer.start();
    await server.admin('CREATE TABLE merchants (id text PRIMARY KEY)', [], true);
    app = await bootClsTypeOrmApp(server, 'rec_cls', [Merchants]);
    merchants = app.get(Merchants);
    delay = app.get(DelayService);
  });
  afterAll(async () => {
    await app?.close();
    await server?.dispose();
  });

  const exists = async (id: string): Promise<boolean> => (await server.admin('SELECT 1 FROM merchants WHERE id = $1', [id], true)).length > 0;

  it('the merchant and its schedule commit together, and it fires', async () => {
    await merchants.create('acme');
    expect(await exists('acme')).toBe(true);
    expect(await delay.getRecurring(AMBIENT, 'acme')).not.toBeNull();
    await pollUntil(() => merchants.fired.includes('acme'), 'an occurrence of the committed schedule', 10_000);
  });

  it('a method that throws after the schedule write leaves neither the merchant nor its schedule, and nothing fires', async () => {
    await expect(merchants.create('ghost', true)).rejects.toBeInstanceOf(MerchantRefused);
    expect(await exists('ghost')).toBe(false);
    expect(await delay.getRecurring(AMBIENT, 'ghost')).toBeNull();
    await sleep(1_500);
    expect(merchants.fired).not.toContain('ghost');
  });

  it('a close that rolls back keeps the schedule; one that commits removes it with the row', async () => {
    await merchants.create('brief');
    await expect(merchants.close('brief', true)).rejects.toBeInstanceOf(MerchantRefused);
    expect(await exists('brief')).toBe(true);
    expect(await delay.getRecurring(AMBIENT, 'brief')).not.toBeNull();
    await merchants.close('brief');
    expect(await exists('brief')).toBe(false);
    expect(await delay.getRecurring(AMBIENT, 'brief')).toBeNull();
  });

  it('transaction: null writes the schedule on its own, outside the transaction', async () => {
    await expect(merchants.createOutside('solo')).rejects.toBeInstanceOf(MerchantRefused);
    expect(await delay.getRecurring(AMBIENT, 'solo')).not.toBeNull();
  });
});
