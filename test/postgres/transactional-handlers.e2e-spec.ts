import { INestApplication, Injectable, Logger } from '@nestjs/common';
import { DelayContext, DelayModuleOptions, DelayService, OnDelayExpired, OnRecurring, TransactionalHandlerUnsupportedError } from 'nestjs-delay';
import { Test } from '@nestjs/testing';
import { DelayModule } from 'nestjs-delay';
import { Client, PoolClient } from 'pg';
import { bootDelayApp, pollUntil, sleep } from '../conformance/support/driver-fixture';
import { TestPostgresServer } from '../support/postgres-server';
import { TestRedisServer } from '../support/redis-server';
import { TcpFaultProxy } from './support/tcp-fault-proxy';
import { PostgresHandlerTransactions } from '../../libs/delay/src/drivers/postgres/postgres-handler-transactions';

const TOPIC = 'ledger.credit';
const FOLLOW_UP = 'ledger.follow-up';
const RECURRING = 'ledger.recurring';
const PLAIN = 'ledger.plain';
const LOCKS = 'ledger.locks';
/** How the lock wait of LOCKS's first attempt ended: its SQLSTATE and how long it waited. */
const lockWaits: Array<{ code: string; waitedMs: number }> = [];

/** What the handler does, per key: throw after writing on these attempts, or sleep past its timeout. */
const behaviour = new Map<
  string,
  {
    throwOn?: number[];
    sleepMsOn?: { attempt: number; ms: number };
    writeAfterSleep?: boolean;
    sqlSleepOn?: number;
    duplicateOn?: number;
    runNowOn?: number;
    swallowOn?: number;
  }
>();
/** What a run that outlived its timeout still tried to write once it woke up, and how that ended. */
const lateWrites: string[] = [];

@Injectable()
class LedgerHandlers {
  readonly runs: Array<{ key: string; attempt: number; at: number }> = [];
  readonly plainRuns: number[] = [];

  constructor(private readonly delay: DelayService) {}

  /** Not idempotent: one ledger row per run, no unique key. */
  @OnDelayExpired(TOPIC, { transactional: true, attempts: 3, backoff: '200ms', timeout: '1s' })
  async credit(context: DelayContext): Promise<void> {
    const { key, attempt } = context;
    this.runs.push({ key, attempt, at: Date.now() });
    const client = context.transaction as PoolClient;
    const early = behaviour.get(key);
    if (early?.sqlSleepOn === attempt) {
      // Given up at its timeout while this statement runs; it goes on to write when the statement returns.
      await client.query('SELECT pg_sleep(2)').catch(() => undefined);
      await client.query('INSERT INTO ledger (key, attempt) VALUES ($1, $2)', [`${key}-late`, attempt]).then(
        () => lateWrites.push('ledger written'),
        () => lateWrites.push('ledger refused'),
      );
      return;
    }
    // A row whose unique key is checked at COMMIT: written twice, the COMMIT fails (the server refuses it).
    if (early?.duplicateOn === attempt) await client.query('INSERT INTO checked_at_commit (k) VALUES ($1), ($1)', [key]);
    // Sets off a claim of another topic from inside this run (an action written on its own, due now, wakes this
    // instance's consumer at once): that topic's handler is not part of this run.
    if (early?.runNowOn === attempt) {
      await this.delay.schedule(PLAIN, `${key}-plain`, { delay: 0, transaction: null });
      await sleep(300);
    }
    await client.query('INSERT INTO ledger (key, attempt) VALUES ($1, $2)', [key, attempt]);
    // A follow-up action, one key per attempt (so one left by a rolled-back attempt would show): no transaction
    // passed, it joins the run's.
    await this.delay.schedule(FOLLOW_UP, `${key}@${attempt}`, { delay: 3_600_000, payload: { attempt } });
    const plan = behaviour.get(key);
    if (plan?.sleepMsOn?.attempt === attempt) {
      await sleep(plan.sleepMsOn.ms);
      if (plan.writeAfterSleep) {
        // A handler that ignores its signal and goes on writing after its run was given up.
        await client.query('INSERT INTO ledger (key, attempt) VALUES ($1, $2)', [`${key}-late`, attempt]).then(
          () => lateWrites.push('ledger written'),
          () => lateWrites.push('ledger refused'),
        );
        await this.delay.schedule(FOLLOW_UP, `${key}-late`, { delay: 3_600_000 }).then(
          () => lateWrites.push('follow-up scheduled'),
          () => lateWrites.push('follow-up refused'),
        );
      }
    }
    // A statement that fails, its error caught: the transaction is aborted, and the handler returns as if all went well.
    if (plan?.swallowOn === attempt) await client.query('SELECT 1 / 0').catch(() => undefined);
    if (plan?.throwOn?.includes(attempt)) throw new Error(`attempt ${attempt} fails after its writes`);
  }

  /** Waits for a row lock on its first attempt: the wait is bounded by the smaller of commandTimeout (3 s here) and its timeout (10 s). */
  @OnDelayExpired(LOCKS, { transactional: true, timeout: '10s', attempts: 2, backoff: '100ms' })
  async locks(context: DelayContext): Promise<void> {
    const client = context.transaction as PoolClient;
    if (context.attempt === 1) {
      const started = Date.now();
      try {
        await client.query('SELECT 1 FROM locked_rows WHERE id = 1 FOR UPDATE');
      } catch (error) {
        lockWaits.push({ code: String((error as { code?: unknown }).code), waitedMs: Date.now() - started });
        throw error;
      }
    }
    await client.query('INSERT INTO ledger (key, attempt) VALUES ($1, $2)', [context.key, context.attempt]);
  }

  /** Not transactional: what it schedules is written on its own, whatever run set it off. */
  @OnDelayExpired(PLAIN)
  async plain(context: DelayContext): Promise<void> {
    this.plainRuns.push(context.attempt);
    await this.delay.schedule(FOLLOW_UP, `${context.key}-from-plain`, { delay: 3_600_000 });
  }

  /** A recurring schedule's occurrences, each credited once with its occurrence's completion. */
  @OnRecurring(RECURRING, { transactional: true })
  async tick(context: DelayContext): Promise<void> {
    await (context.transaction as PoolClient).query('INSERT INTO ledger (key, attempt) VALUES ($1, $2)', [context.occurrence?.key ?? '?', context.attempt]);
  }
}

@Injectable()
class TransactionalOnOtherDriver {
  @OnDelayExpired('elsewhere', { transactional: true })
  run(): void {
    // never called: bootstrap fails
  }
}

describe('postgres: transactional handlers commit with their action', () => {
  let server: TestPostgresServer;
  let app: INestApplication | undefined;
  let schemas = 0;

  beforeAll(async () => {
    server = await TestPostgresServer.start();
    await server.admin('CREATE TABLE ledger (key text NOT NULL, attempt integer NOT NULL)', [], true);
    await server.admin('CREATE TABLE locked_rows (id integer PRIMARY KEY); INSERT INTO locked_rows VALUES (1)', [], true);
    await server.admin('CREATE TABLE checked_at_commit (k text, CONSTRAINT checked_at_commit_k UNIQUE (k) DEFERRABLE INITIALLY DEFERRED)', [], true);
  }, 60_000);
  afterAll(() => server.dispose());
  afterEach(async () => {
    await app?.close();
    app = undefined;
    behaviour.clear();
    await server.admin('TRUNCATE ledger', [], true);
  });

  async function boot(url = server.url, pooler: 'session' | 'transaction' = 'session'): Promise<{ delay: DelayService; handlers: LedgerHandlers; schema: string }> {
    const schema = `txh_${process.pid}_${++schemas}`;
    const options: DelayModuleOptions = { driver: { type: 'postgres', connectionString: url, schema, commandTimeout: '3s', pooler }, shutdownTimeout: '2s' };
    app = await bootDelayApp(options, [LedgerHandlers]);
    return { delay: app.get(DelayService), handlers: app.get(LedgerHandlers), schema };
  }
  const ledger = async (key: string): Promise<number[]> =>
    (await server.admin('SELECT attempt FROM ledger WHERE key = $1 ORDER BY attempt', [key], true)).map((row) => Number(row.attempt));

  it("commits the handler's writes, its follow-up action and the completion together", async () => {
    const { delay, handlers } = await boot();
    await delay.schedule(TOPIC, 'order-1', { delay: 0 });
    await pollUntil(async () => (await delay.get(TOPIC, 'order-1')) === null, 'the completion', 10_000);
    expect(await ledger('order-1')).toEqual([1]);
    expect(await delay.get(FOLLOW_UP, 'order-1@1')).toMatchObject({ payload: { attempt: 1 } });
    expect(handlers.runs.map(({ key, attempt }) => ({ key, attempt }))).toEqual([{ key: 'order-1', attempt: 1 }]);
  });

  it('a throw rolls back every write of the run, follow-up included; the retry runs as the next attempt and commits once', async () => {
    const { delay, handlers } = await boot();
    behaviour.set('order-2', { throwOn: [1, 2] });
    await delay.schedule(TOPIC, 'order-2', { delay: 0 });
    await pollUntil(async () => (await delay.get(TOPIC, 'order-2')) === null, 'the completion', 15_000);
    expect(handlers.runs.map((run) => run.attempt)).toEqual([1, 2, 3]);
    // Attempts 1 and 2 wrote and threw: nothing of them remains.
    expect(await ledger('order-2')).toEqual([3]);
    expect(await delay.get(FOLLOW_UP, 'order-2@3')).toMatchObject({ payload: { attempt: 3 } });
    expect([await delay.get(FOLLOW_UP, 'order-2@1'), await delay.get(FOLLOW_UP, 'order-2@2')]).toEqual([null, null]);
  });

  it("a run past its timeout is rolled back (its writes and follow-up gone) and retried; the retry's commit stands alone", async () => {
    const { delay, handlers } = await boot();
    behaviour.set('order-3', { sleepMsOn: { attempt: 1, ms: 2_500 } });
    await delay.schedule(TOPIC, 'order-3', { delay: 0 });
    await pollUntil(async () => (await delay.get(TOPIC, 'order-3')) === null, 'the completion', 15_000);
    // The timed-out run's handler finishes later; its transaction was rolled back meanwhile.
    await sleep(2_000);
    expect(handlers.runs.map((run) => run.attempt)).toEqual([1, 2]);
    expect(await ledger('order-3')).toEqual([2]);
    expect(await delay.get(FOLLOW_UP, 'order-3@2')).toMatchObject({ payload: { attempt: 2 } });
    expect(await delay.get(FOLLOW_UP, 'order-3@1')).toBeNull();
  });

  it('a run given up at its timeout whose handler goes on writing: nothing it writes afterwards lands, in its transaction or another run\'s', async () => {
    const { delay } = await boot();
    lateWrites.length = 0;
    behaviour.set('order-5', { sleepMsOn: { attempt: 1, ms: 2_000 }, writeAfterSleep: true });
    await delay.schedule(TOPIC, 'order-5', { delay: 0 });
    // Other runs meanwhile, which may get the given-up run's connection.
    for (let n = 0; n < 10; n++) await delay.schedule(TOPIC, `busy-${n}`, { delay: 1_200 + n * 100 });
    await pollUntil(() => lateWrites.length === 2, 'the late writes to be tried', 10_000);
    await pollUntil(async () => (await delay.count(TOPIC)) === 0, 'every run', 15_000);
    expect(lateWrites).toEqual(['ledger refused', 'follow-up refused']);
    expect(await ledger('order-5-late')).toEqual([]);
    expect(await delay.get(FOLLOW_UP, 'order-5-late')).toBeNull();
    expect(await ledger('order-5')).toEqual([2]);
    for (let n = 0; n < 10; n++) expect(await ledger(`busy-${n}`)).toEqual([1]);
  });

  it('a run given up while a statement of its handler runs: the statement after it is refused, not committed on its own', async () => {
    const { delay, handlers } = await boot();
    lateWrites.length = 0;
    behaviour.set('order-6', { sqlSleepOn: 1 });
    await delay.schedule(TOPIC, 'order-6', { delay: 0 });
    await pollUntil(() => lateWrites.length === 1, 'the late write to be tried', 10_000);
    await pollUntil(async () => (await delay.get(TOPIC, 'order-6')) === null, 'the retry', 10_000);
    expect(lateWrites).toEqual(['ledger refused']);
    expect(await ledger('order-6-late')).toEqual([]);
    expect(await ledger('order-6')).toEqual([2]);
    expect(handlers.runs.map((run) => run.attempt)).toEqual([1, 2]);
  });

  it('a COMMIT the server refuses (a deferred unique key) is an ordinary failure: rolled back, retried after the backoff as the next attempt', async () => {
    const { delay, handlers } = await boot();
    behaviour.set('order-7', { duplicateOn: 1 });
    await delay.schedule(TOPIC, 'order-7', { delay: 0 });
    await pollUntil(async () => (await delay.get(TOPIC, 'order-7')) === null, 'the retry', 10_000);
    expect(handlers.runs.map((run) => run.attempt)).toEqual([1, 2]);
    // After the backoff (200 ms), not at once as a commit whose outcome is unknown would be.
    expect(handlers.runs[1].at - handlers.runs[0].at).toBeGreaterThanOrEqual(190);
    expect(await ledger('order-7')).toEqual([2]);
    expect(await server.admin(`SELECT k FROM checked_at_commit WHERE k = 'order-7'`, [], true)).toEqual([]);
    expect((await delay.listDead(TOPIC)).items).toEqual([]);
  });

  it('on its own connection a run sends two messages besides the handler\'s statements: BEGIN with the lock of its arming, its completion with COMMIT', async () => {
    const proxy = await TcpFaultProxy.start(server.port);
    try {
      const url = new URL(server.url);
      url.port = String(proxy.port);
      const { delay } = await boot(url.href);
      const sent = proxy.recordQueries();
      await delay.schedule(TOPIC, 'order-10', { delay: 0 });
      await pollUntil(async () => (await delay.get(TOPIC, 'order-10')) === null, 'the completion', 10_000);
      expect(await ledger('order-10')).toEqual([1]);
      const frame = sent.texts.filter((text) => /\b(BEGIN|COMMIT|ROLLBACK)\b|begin_run|complete_run/.test(text));
      expect(frame).toHaveLength(2);
      expect(frame[0]).toMatch(/^BEGIN;SELECT \S+\.begin_run\(/);
      expect(frame[1]).toMatch(/^SELECT \S+\.complete_run\(.*;COMMIT$/s);
    } finally {
      await app?.close();
      app = undefined;
      await proxy.close();
    }
  });

  it('a handler that catches a failed statement and returns: the completion sent with COMMIT is refused (the transaction is aborted), the COMMIT never runs, and the run is retried after the backoff', async () => {
    const { delay, handlers } = await boot();
    behaviour.set('order-11', { swallowOn: 1 });
    await delay.schedule(TOPIC, 'order-11', { delay: 0 });
    await pollUntil(async () => (await delay.get(TOPIC, 'order-11')) === null, 'the retry', 10_000);
    expect(handlers.runs.map((run) => run.attempt)).toEqual([1, 2]);
    // An ordinary failure (the server refused the statement), not a commit in doubt: after the backoff.
    expect(handlers.runs[1].at - handlers.runs[0].at).toBeGreaterThanOrEqual(190);
    expect(await ledger('order-11')).toEqual([2]);
    expect(await delay.get(FOLLOW_UP, 'order-11@1')).toBeNull();
  });

  it('a framed transaction whose first statement finds no arming ends with a ROLLBACK and keeps its connection; a failed last statement skips the COMMIT', async () => {
    const transactions = new PostgresHandlerTransactions(server.url, undefined, 3_000);
    transactions.sizeFor(1);
    const pid = async (client: unknown): Promise<number> => Number((await (client as PoolClient).query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
    try {
      const pids: number[] = [];
      const gone = await transactions.framed('SELECT false AS found', async (client, opened) => {
        pids.push(await pid(client));
        await (client as PoolClient).query(`INSERT INTO ledger (key, attempt) VALUES ('framed-gone', 1)`);
        return opened[0]?.found === true ? 'SELECT 1' : null;
      });
      expect(gone).toBe(false);
      await expect(
        transactions.framed('SELECT true AS found', async (client) => {
          pids.push(await pid(client));
          await (client as PoolClient).query(`INSERT INTO ledger (key, attempt) VALUES ('framed-failed', 1)`);
          return 'SELECT 1 / 0';
        }),
      ).rejects.toMatchObject({ code: '22012' });
      const committed = await transactions.framed('SELECT true AS found', async (client) => {
        pids.push(await pid(client));
        await (client as PoolClient).query(`INSERT INTO ledger (key, attempt) VALUES ('framed-committed', 1)`);
        return 'SELECT 1';
      });
      expect(committed).toBe(true);
      // The ROLLBACK kept the connection; the failure destroyed it.
      expect(pids[1]).toBe(pids[0]);
      expect(pids[2]).not.toBe(pids[1]);
      expect(await ledger('framed-gone')).toEqual([]);
      expect(await ledger('framed-failed')).toEqual([]);
      expect(await ledger('framed-committed')).toEqual([1]);
    } finally {
      await transactions.close();
    }
  });

  it("a handler another run sets off (an action it writes on its own, due now) is not part of that run's transaction", async () => {
    // No LISTEN (pooler 'transaction'): the other topic's claim is set off by the timer its write armed, from inside the run.
    const { delay, handlers } = await boot(server.url, 'transaction');
    behaviour.set('order-8', { runNowOn: 1, throwOn: [1] });
    await delay.schedule(TOPIC, 'order-8', { delay: 0 });
    await pollUntil(async () => (await delay.get(TOPIC, 'order-8')) === null, 'the retry', 10_000);
    // The transactional run threw and rolled back; the plain handler's follow-up was its own.
    await pollUntil(async () => (await delay.get(FOLLOW_UP, 'order-8-plain-from-plain')) !== null, 'the plain follow-up', 5_000);
    // Once, at its first attempt: its call was neither joined to the other run's transaction nor refused as part of it.
    expect(handlers.plainRuns).toEqual([1]);
  });

  it("a lock the handler waits on is bounded by commandTimeout (smaller than its timeout here): the run fails with a lock timeout and is retried", async () => {
    const { delay } = await boot();
    const holder = new Client({ connectionString: server.url });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM locked_rows WHERE id = 1 FOR UPDATE');
    try {
      await delay.schedule(LOCKS, 'held', { delay: 0 });
      await pollUntil(() => lockWaits.length === 1, 'the lock wait to end', 15_000);
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
    // 55P03: lock_not_available, after about commandTimeout (3 s), well before the handler's 10 s timeout.
    expect(lockWaits[0].code).toBe('55P03');
    expect(lockWaits[0].waitedMs).toBeGreaterThanOrEqual(2_500);
    expect(lockWaits[0].waitedMs).toBeLessThan(9_000);
    await pollUntil(async () => (await ledger('held')).length === 1, 'the retry', 10_000);
    expect(await ledger('held')).toEqual([2]);
  }, 30_000);

  it('a recurring occurrence commits with its completion and its last run', async () => {
    const { delay } = await boot();
    await delay.upsertRecurring(RECURRING, 'daily', { every: '1s' });
    await pollUntil(async () => (await delay.getRecurring(RECURRING, 'daily'))?.lastRun?.outcome === 'succeeded', 'an occurrence', 10_000);
    await delay.removeRecurring(RECURRING, 'daily');
    await sleep(300);
    const credited = await server.admin(`SELECT key, count(*)::int AS n FROM ledger WHERE key LIKE 'daily%' GROUP BY key`, [], true);
    expect(credited.length).toBeGreaterThan(0);
    for (const row of credited) expect(row.n).toBe(1);
  });

  it('a lost COMMIT reply (the commit happened, the instance does not know) is resolved by the row, not by running again', async () => {
    const proxy = await TcpFaultProxy.start(server.port);
    try {
      const url = new URL(server.url);
      url.port = String(proxy.port);
      const { delay, handlers } = await boot(url.href);
      const lost = proxy.resetOnReply('COMMIT');
      await delay.schedule(TOPIC, 'order-4', { delay: 0 });
      await pollUntil(() => lost.at.length === 1, 'the lost COMMIT reply', 10_000);
      await pollUntil(async () => (await delay.get(TOPIC, 'order-4')) === null, 'the action to be gone', 10_000);
      await sleep(1_500);
      expect(handlers.runs.map(({ key, attempt }) => ({ key, attempt }))).toEqual([{ key: 'order-4', attempt: 1 }]);
      expect(await ledger('order-4')).toEqual([1]);
      expect(await delay.get(FOLLOW_UP, 'order-4@1')).toMatchObject({ payload: { attempt: 1 } });
    } finally {
      await app?.close();
      app = undefined;
      await proxy.close();
    }
  });

  it("a handler connection cut as the pool hands it out (pg_terminate_backend) fails its run, never the process: every connection's errors are heard", async () => {
    // The pool stops listening to a connection as it hands it out, and the run listens a few promise turns later: a
    // FATAL read with the last bytes of the connection's startup was emitted to no one, an uncaught error that ended
    // the process (seen in test/postgres/transactional-storm.e2e-spec.ts). Runs open connections all the time here,
    // and rounds of pg_terminate_backend cut them at every stage; before the fix this failed within seconds.
    const transactions = new PostgresHandlerTransactions(server.url, undefined, 3_000);
    transactions.sizeFor(20);
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown): void => void uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    // Each cut connection is logged at debug level: hundreds of lines.
    Logger.overrideLogger(['error']);
    let stop = false;
    let committed = 0;
    let failed = 0;
    const lane = async (): Promise<void> => {
      while (!stop) {
        await transactions
          .run(async (transaction) => {
            await (transaction as PoolClient).query('SELECT 1');
            await sleep(Math.random() * 5);
          })
          .then(
            () => committed++,
            () => failed++,
          );
      }
    };
    try {
      const lanes = Array.from({ length: 20 }, lane);
      let terminated = 0;
      for (const deadline = Date.now() + 8_000; Date.now() < deadline && uncaught.length === 0; ) {
        terminated += await server.terminateBackends("application_name = 'nestjs-delay handlers'");
        await sleep(Math.random() * 20);
      }
      stop = true;
      await Promise.all(lanes);
      expect(uncaught).toEqual([]);
      // Both happened: runs were cut, and runs committed between the rounds.
      expect(terminated).toBeGreaterThan(0);
      expect(failed).toBeGreaterThan(0);
      expect(committed).toBeGreaterThan(0);
    } finally {
      stop = true;
      process.off('uncaughtException', onUncaught);
      await transactions.close();
      Logger.overrideLogger(['log', 'error', 'warn', 'debug', 'verbose', 'fatal']);
    }
  }, 30_000);

  it('is refused at bootstrap on the wheel and on Redis, naming the option and the driver', async () => {
    const wheel = Test.createTestingModule({ imports: [DelayModule.forRoot({ driver: { type: 'wheel' } })], providers: [TransactionalOnOtherDriver] });
    const wheelApp = (await wheel.compile()).createNestApplication();
    await expect(wheelApp.init()).rejects.toThrow(TransactionalHandlerUnsupportedError);
    await wheelApp.close().catch(() => undefined);
    const redis = await TestRedisServer.start();
    try {
      const moduleRef = Test.createTestingModule({ imports: [DelayModule.forRoot({ driver: { type: 'redis', url: redis.url } })], providers: [TransactionalOnOtherDriver] });
      const redisApp = (await moduleRef.compile()).createNestApplication();
      await expect(redisApp.init()).rejects.toThrow(/TransactionalOnOtherDriver\.run has the option transactional: true, which the "redis" delay driver cannot honour/);
      await redisApp.close().catch(() => undefined);
    } finally {
      await redis.stop();
    }
  });
});
