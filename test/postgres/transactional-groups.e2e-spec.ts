import { INestApplication, Injectable } from '@nestjs/common';
import { DelayContext, DelayModuleOptions, DelayService, OnDelayExpired } from 'nestjs-delay';
import { PoolClient } from 'pg';
import { bootDelayApp, pollUntil, sleep } from '../conformance/support/driver-fixture';
import { TestPostgresServer } from '../support/postgres-server';
import { TcpFaultProxy } from './support/tcp-fault-proxy';

// Transactional runs that come together share one transaction on the driver's own connection, each in a savepoint
// of its own (PostgresRunGroups): what one run does never leaks into, nor fails, its neighbours'.

const TOPIC = 'group.credit';
const FOLLOW_UP = 'group.follow-up';
const NOOP = 'group.noop';

/** Per key: what a run does besides its ledger row. */
const behaviour = new Map<string, { throwOn?: number; swallowOn?: number; sleepOn?: number; duplicateOn?: number; stray?: boolean; recoverOn?: number; commitOn?: number }>();
/** What a handler's own COMMIT got. */
const commits: string[] = [];
/** Every run's ledger write as the handler saw it: its key, attempt and transaction id. */
const seen: Array<{ key: string; attempt: number; tx: string }> = [];
const late: string[] = [];

@Injectable()
class GroupHandlers {
  noops = 0;

  constructor(private readonly delay: DelayService) {}

  /** Not idempotent: a ledger row per run (no unique key), and a follow-up per attempt. */
  @OnDelayExpired(TOPIC, { transactional: true, concurrency: 50, attempts: 3, backoff: '100ms', timeout: '4s' })
  async credit(context: DelayContext): Promise<void> {
    const { key, attempt } = context;
    const client = context.transaction as PoolClient;
    const plan = behaviour.get(key);
    if (plan?.stray === true) {
      // Not awaited: it is queued on the run's connection before the run ends, so it belongs to this run.
      void client.query('INSERT INTO group_ledger (key, attempt, tx) VALUES ($1, $2, txid_current())', [`${key}-stray`, attempt]);
    }
    const { rows } = await client.query<{ tx: string }>('INSERT INTO group_ledger (key, attempt, tx) VALUES ($1, $2, txid_current()) RETURNING tx::text', [key, attempt]);
    seen.push({ key, attempt, tx: rows[0].tx });
    await this.delay.schedule(FOLLOW_UP, `${key}@${attempt}`, { delay: 3_600_000 });
    if (plan?.duplicateOn === attempt) await client.query('INSERT INTO group_checked (k) VALUES ($1), ($1)', [key]);
    if (plan?.swallowOn === attempt) await client.query('SELECT 1 / 0').catch(() => undefined);
    if (plan?.recoverOn === attempt) {
      // A failed statement rolled back to a savepoint of the handler's own: its part of the transaction is sound.
      await client.query('SAVEPOINT mine');
      await client.query('SELECT 1 / 0').catch(() => undefined);
      await client.query('ROLLBACK TO SAVEPOINT mine');
      await client.query('INSERT INTO group_ledger (key, attempt, tx) VALUES ($1, $2, txid_current())', [`${key}-recovered`, attempt]);
    }
    if (plan?.commitOn === attempt) {
      await client.query('COMMIT').then(
        () => commits.push('committed'),
        (error: Error) => commits.push(error.constructor.name),
      );
    }
    if (plan?.sleepOn === attempt) {
      await sleep(5_000);
      await client.query('INSERT INTO group_ledger (key, attempt, tx) VALUES ($1, $2, txid_current())', [`${key}-late`, attempt]).then(
        () => late.push('written'),
        () => late.push('refused'),
      );
    }
    if (plan?.throwOn === attempt) throw new Error(`attempt ${attempt} of ${key} fails after its writes`);
  }

  /** Sends no statement: costs its group no message. */
  @OnDelayExpired(NOOP, { transactional: true, concurrency: 50 })
  noop(): void {
    this.noops++;
  }
}

describe('postgres: transactional runs that come together share a transaction, each in its own savepoint', () => {
  let server: TestPostgresServer;
  let app: INestApplication | undefined;
  let schemas = 0;

  beforeAll(async () => {
    server = await TestPostgresServer.start();
    await server.admin('CREATE TABLE group_ledger (key text NOT NULL, attempt integer NOT NULL, tx bigint NOT NULL)', [], true);
    await server.admin('CREATE TABLE group_checked (k text, CONSTRAINT group_checked_k UNIQUE (k) DEFERRABLE INITIALLY DEFERRED)', [], true);
  }, 60_000);
  afterAll(() => server.dispose());
  afterEach(async () => {
    await app?.close();
    app = undefined;
    behaviour.clear();
    seen.length = 0;
    late.length = 0;
    commits.length = 0;
    await server.admin('TRUNCATE group_ledger, group_checked', [], true);
  });

  async function boot(url = server.url): Promise<{ delay: DelayService; handlers: GroupHandlers }> {
    const schema = `txg_${process.pid}_${++schemas}`;
    const options: DelayModuleOptions = { driver: { type: 'postgres', connectionString: url, schema, commandTimeout: '3s' }, shutdownTimeout: '2s' };
    app = await bootDelayApp(options, [GroupHandlers]);
    return { delay: app.get(DelayService), handlers: app.get(GroupHandlers) };
  }

  /** `count` actions due at once, written in one call (so they are claimed together). */
  async function dueAtOnce(delay: DelayService, count: number, topic = TOPIC): Promise<string[]> {
    const keys = Array.from({ length: count }, (_, n) => `k-${String(n).padStart(3, '0')}`);
    await delay.scheduleMany(topic, keys.map((key) => ({ key, delay: 0 })));
    return keys;
  }

  const ledger = async (): Promise<Map<string, number[]>> => {
    const rows = await server.admin('SELECT key, attempt FROM group_ledger ORDER BY key, attempt', [], true);
    const byKey = new Map<string, number[]>();
    for (const row of rows) byKey.set(String(row.key), [...(byKey.get(String(row.key)) ?? []), Number(row.attempt)]);
    return byKey;
  };

  /** The committed rows of the keys other than `except`: one each (from attempt 1, unless a busy machine timed it out), with its follow-up. */
  async function othersOnce(delay: DelayService, keys: string[], except: string[]): Promise<void> {
    const rows = await ledger();
    for (const key of keys.filter((candidate) => !except.includes(candidate))) {
      expect([key, rows.get(key)?.length]).toEqual([key, 1]);
    }
    const followUps = await delay.list(FOLLOW_UP, { limit: 1000 });
    expect(followUps.items.length).toBe(keys.length);
  }

  /** The runs that wrote in the same transaction as `key`'s attempt `attempt`. */
  const neighbours = (key: string, attempt: number): string[] => {
    const tx = seen.find((run) => run.key === key && run.attempt === attempt)?.tx;
    return seen.filter((run) => run.tx === tx && run.key !== key).map((run) => run.key);
  };
  /** Every tenth key of 60: one of them at least shares its transaction with others, whatever the machine's speed. */
  const faulty = ['k-003', 'k-013', 'k-023', 'k-033', 'k-043', 'k-053'];
  /** The faulty keys' first attempts: rolled back, retried once, and at least one of them had neighbours that committed. */
  async function faultyAlone(delay: DelayService, keys: string[]): Promise<void> {
    const rows = await ledger();
    // One committed row each, not from the attempt that failed.
    for (const key of faulty) expect([key, rows.get(key)?.length, rows.get(key)?.includes(1)]).toEqual([key, 1, false]);
    expect(faulty.some((key) => neighbours(key, 1).length > 0)).toBe(true);
    await othersOnce(delay, keys, faulty);
  }

  it('a backlog of runs commits in shared transactions: every run exactly once, fewer commits than runs', async () => {
    const { delay } = await boot();
    const keys = await dueAtOnce(delay, 200);
    await pollUntil(async () => (await delay.count(TOPIC)) === 0, 'every run', 20_000);
    const rows = await ledger();
    expect(keys.map((key) => rows.get(key)?.length)).toEqual(keys.map(() => 1));
    expect((await delay.list(FOLLOW_UP, { limit: 1000 })).items.length).toBe(200);
    const transactions = new Set((await server.admin('SELECT DISTINCT tx FROM group_ledger', [], true)).map((row) => String(row.tx)));
    // Alone, each run would commit its own: 200 transactions. (How many share one depends on the machine's speed.)
    expect(transactions.size).toBeLessThan(200);
  });

  it('a run that throws after writing is rolled back alone: its neighbours in the transaction commit, it is retried', async () => {
    const { delay } = await boot();
    for (const key of faulty) behaviour.set(key, { throwOn: 1 });
    const keys = await dueAtOnce(delay, 60);
    await pollUntil(async () => (await delay.count(TOPIC)) === 0, 'every run', 20_000);
    for (const key of faulty) {
      expect(await delay.get(FOLLOW_UP, `${key}@1`)).toBeNull();
      expect(await delay.get(FOLLOW_UP, `${key}@2`)).not.toBeNull();
    }
    await faultyAlone(delay, keys);
  });

  it('a run that catches its own failed statement is not done: rolled back alone and retried; its neighbours commit', async () => {
    const { delay } = await boot();
    for (const key of faulty) behaviour.set(key, { swallowOn: 1 });
    const keys = await dueAtOnce(delay, 60);
    await pollUntil(async () => (await delay.count(TOPIC)) === 0, 'every run', 20_000);
    await faultyAlone(delay, keys);
  });

  it('a handler that rolls a failed statement back to a savepoint of its own is done: its writes commit with its neighbours', async () => {
    const { delay } = await boot();
    for (const key of faulty) behaviour.set(key, { recoverOn: 1 });
    const keys = await dueAtOnce(delay, 60);
    await pollUntil(async () => (await delay.count(TOPIC)) === 0, 'every run', 20_000);
    const rows = await ledger();
    for (const key of faulty) expect([key, rows.get(`${key}-recovered`)?.length]).toEqual([key, 1]);
    await othersOnce(delay, keys, []);
  });

  it("a handler's own COMMIT is refused (the transaction is the driver's, shared): nothing is committed early, every run once", async () => {
    const { delay } = await boot();
    for (const key of faulty) behaviour.set(key, { commitOn: 1 });
    const keys = await dueAtOnce(delay, 60);
    await pollUntil(async () => (await delay.count(TOPIC)) === 0, 'every run', 20_000);
    expect(commits).toEqual(faulty.map(() => 'TransactionNotActiveError'));
    await othersOnce(delay, keys, []);
  });

  it('a run past its timeout is rolled back alone, and its later statement refused; its neighbours commit', async () => {
    const { delay } = await boot();
    behaviour.set('k-005', { sleepOn: 1 });
    const keys = await dueAtOnce(delay, 40);
    await pollUntil(async () => (await delay.count(TOPIC)) === 0, 'every run', 20_000);
    await pollUntil(() => late.length === 1, 'the late statement', 10_000);
    expect(late).toEqual(['refused']);
    const rows = await ledger();
    expect([rows.get('k-005')?.length, rows.get('k-005')?.includes(1)]).toEqual([1, false]);
    expect(rows.get('k-005-late')).toBeUndefined();
    await othersOnce(delay, keys, ['k-005']);
  });

  it('a shared COMMIT the server refuses (one run broke a deferred unique key): the others go again each alone and commit once; only that run fails', async () => {
    const { delay } = await boot();
    for (const key of faulty) behaviour.set(key, { duplicateOn: 1 });
    const keys = await dueAtOnce(delay, 60);
    await pollUntil(async () => (await delay.count(TOPIC)) === 0, 'every run', 20_000);
    await faultyAlone(delay, keys);
    expect((await delay.listDead(TOPIC)).items).toEqual([]);
  });

  it('a statement the handler did not await is part of its own run, in whatever order runs share the transaction', async () => {
    const { delay } = await boot();
    const keys = await dueAtOnce(delay, 60);
    for (const key of keys) behaviour.set(key, { stray: true });
    behaviour.set('k-007', { stray: true, throwOn: 1 });
    await pollUntil(async () => (await delay.count(TOPIC)) === 0, 'every run', 20_000);
    await sleep(200);
    const rows = await ledger();
    // Each run's stray row went with its run: one for each committed run.
    for (const key of keys) expect([key, rows.get(`${key}-stray`)]).toEqual([key, rows.get(key)]);
    // The run that threw: its stray statement went with it; its retry's stayed.
    expect(rows.get('k-007-stray')?.includes(1)).toBe(false);
    expect(rows.get('k-007')?.length).toBe(1);
  });

  it('runs that send no statement cost one message each (the lock of its arming, in its savepoint); a group commits their completions in one', async () => {
    const proxy = await TcpFaultProxy.start(server.port);
    try {
      const url = new URL(server.url);
      url.port = String(proxy.port);
      const { delay, handlers } = await boot(url.href);
      const sent = proxy.recordQueries();
      await dueAtOnce(delay, 100, NOOP);
      await pollUntil(async () => (await delay.count(NOOP)) === 0, 'every run', 20_000);
      expect(handlers.noops).toBe(100);
      const framing = sent.texts.filter((text) => /begin_run|complete_run|SAVEPOINT/.test(text));
      const locks = framing.reduce((sum, text) => sum + (text.match(/begin_run\(/g)?.length ?? 0), 0);
      const completions = framing.reduce((sum, text) => sum + (text.match(/complete_run\(/g)?.length ?? 0), 0);
      expect([locks, completions]).toEqual([100, 100]);
      // Alone, each run sends two: 200 messages.
      expect(framing.length).toBeLessThan(150);
      expect(framing.filter((text) => text.endsWith(';COMMIT')).length).toBeLessThan(50);
    } finally {
      await app?.close();
      app = undefined;
      await proxy.close();
    }
  });
});
