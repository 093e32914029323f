import { INestApplication, Injectable } from '@nestjs/common';
import { DelayContext, DelayService, OnDelayExpired } from 'nestjs-delay';
import { Client } from 'pg';
import { PostgresDriver } from '../../libs/delay/src/drivers/postgres/postgres.driver';
import { Delivery } from '../../libs/delay/src/interfaces/delay-driver.interface';
import { bootDelayApp, pollUntil, sleep } from '../conformance/support/driver-fixture';
import { TestPostgresServer } from '../support/postgres-server';
import { TcpFaultProxy } from './support/tcp-fault-proxy';
import { watchTimerLateness } from '../support/timer-lateness';

const TOPIC = 'pgfault.basic';
const COMMAND_TIMEOUT_MS = 1_000;
/** A call must settle within the command timeout; this much more is allowed for a busy machine. */
const SLACK_MS = 1_500;

interface Run {
  readonly key: string;
  readonly attempt: number;
}

@Injectable()
class Handlers {
  readonly runs: Run[] = [];
  hold: (context: DelayContext) => Promise<void> | void = () => undefined;

  @OnDelayExpired(TOPIC, { attempts: 5, backoff: '100ms', concurrency: 50 })
  async onBasic(context: DelayContext): Promise<void> {
    this.runs.push({ key: context.key, attempt: context.attempt });
    await this.hold(context);
  }

  keys(): string[] {
    return [...new Set(this.runs.map((run) => run.key))].sort();
  }
}

/**
 * How long a call took, less how late timers ran on this machine meanwhile (a machine busy with other work delays the
 * library's own timeout by that much; see watchTimerLateness), and how it ended.
 */
async function timed(call: () => Promise<unknown>): Promise<{ ms: number; error: unknown }> {
  const started = performance.now();
  const lateness = watchTimerLateness();
  let error: unknown;
  try {
    await call();
  } catch (thrown) {
    error = thrown;
  }
  return { ms: performance.now() - started - lateness(), error };
}

/**
 * The postgres driver under faults: the server killed (-9) and started
 * again, backends terminated, the server frozen, a statement blocked on a
 * lock, a connection that loses a claim's reply, an instance that dies
 * mid-run. Every call settles within the command timeout, nothing
 * committed is lost, and the consumer carries on once the fault ends.
 */
describe('postgres: faults', () => {
  let server: TestPostgresServer;
  let app: INestApplication | undefined;
  let producer: INestApplication | undefined;
  let proxy: TcpFaultProxy | undefined;
  let schemas = 0;
  let schema: string;

  beforeAll(async () => {
    server = await TestPostgresServer.start();
  }, 60_000);

  afterAll(async () => {
    await server.dispose();
  });

  beforeEach(() => {
    schema = `fault_${process.pid}_${++schemas}`;
  });

  afterEach(async () => {
    proxy?.heal();
    await app?.close();
    await producer?.close();
    await proxy?.close();
    app = producer = proxy = undefined;
  });

  function urlOf(port: number): string {
    return `postgres://postgres@127.0.0.1:${port}/postgres`;
  }

  async function boot(
    options: { url?: string; lease?: string; wakeCheck?: string; consume?: boolean; vacuum?: boolean } = {},
  ): Promise<{ app: INestApplication; delay: DelayService; handlers: Handlers }> {
    const booted = await bootDelayApp(
      {
        driver: {
          type: 'postgres',
          connectionString: options.url ?? server.url,
          schema,
          commandTimeout: COMMAND_TIMEOUT_MS,
          lease: options.lease ?? '2s',
          wakeCheck: options.wakeCheck ?? '1s',
          vacuum: options.vacuum ?? true,
        },
        consume: options.consume ?? true,
        shutdownTimeout: '1s',
      },
      [Handlers],
    );
    return { app: booted, delay: booted.get(DelayService), handlers: booted.get(Handlers) };
  }

  it('PostgreSQL unreachable at startup: bootstrap fails with DriverUnavailableError, at once', async () => {
    const closed = await TcpFaultProxy.start(server.port);
    const port = closed.port;
    await closed.close();
    const failed = await timed(() => boot({ url: urlOf(port) }));
    expect(failed.error).toMatchObject({ code: 'ERR_DELAY_DRIVER_UNAVAILABLE' });
    expect(failed.ms).toBeLessThan(COMMAND_TIMEOUT_MS + SLACK_MS);
  });

  it('PostgreSQL killed (-9) and started again: calls meanwhile fail within the bound, every committed action fires', async () => {
    const booted = await boot();
    app = booted.app;
    const { delay, handlers } = booted;
    const keys = Array.from({ length: 20 }, (_, n) => `k${n}`);
    // Half due during the outage, half after it.
    for (const [n, key] of keys.entries()) await delay.schedule(TOPIC, key, { delay: n % 2 === 0 ? 500 : 2_500 });

    await server.kill();
    const during = await timed(() => delay.schedule(TOPIC, 'during', { delay: 100 }));
    expect(during.error).toMatchObject({ code: 'ERR_DELAY_DRIVER_UNAVAILABLE' });
    expect(during.ms).toBeLessThan(COMMAND_TIMEOUT_MS + SLACK_MS);
    const count = await timed(() => delay.count(TOPIC));
    expect(count.error).toMatchObject({ code: 'ERR_DELAY_DRIVER_UNAVAILABLE' });
    expect(count.ms).toBeLessThan(COMMAND_TIMEOUT_MS + SLACK_MS);
    const health = await delay.health();
    expect(health.up).toBe(false);
    await sleep(1_000);
    await server.boot();

    await pollUntil(() => handlers.keys().length === keys.length, 'every committed action to run', 15_000, 50);
    await pollUntil(async () => (await delay.count(TOPIC)) === 0, 'the acks', 5_000, 50);
    expect(handlers.keys()).toEqual([...keys].sort());
    expect((await delay.health()).up).toBe(true);
  }, 60_000);

  it('backends terminated (the LISTEN connection too): the listener comes back and a later arming wakes the consumer at once', async () => {
    // A long safety re-check: the run below can only be on time if a notification reached the consumer.
    const booted = await boot({ wakeCheck: '30s' });
    app = booted.app;
    const { handlers } = booted;
    const other = await boot({ consume: false });
    producer = other.app;
    await sleep(300);
    expect(await server.terminateBackends()).toBeGreaterThan(0);
    await sleep(1_500);
    const before = Date.now();
    await other.delay.schedule(TOPIC, 'after-terminate', { delay: 200 });
    await pollUntil(() => handlers.runs.length > 0, 'the run', 5_000, 10);
    expect(Date.now() - before).toBeLessThan(5_000);
    expect(handlers.runs).toEqual([{ key: 'after-terminate', attempt: 1 }]);
  }, 30_000);

  it('the server frozen (SIGSTOP): every call settles within the bound; after it thaws nothing is lost and nothing stalls', async () => {
    const booted = await boot();
    app = booted.app;
    const { delay, handlers } = booted;
    await delay.schedule(TOPIC, 'before', { delay: 1_000 });
    server.pause();
    try {
      const calls = await Promise.all([
        timed(() => delay.schedule(TOPIC, 'frozen', { delay: 100 })),
        // A call that timed out may still be applied once the server thaws (its bytes were sent): this one touches nothing that matters.
        timed(() => delay.cancel(TOPIC, 'nobody')),
        timed(() => delay.get(TOPIC, 'before')),
        timed(() => delay.list(TOPIC)),
        timed(() => delay.collect(TOPIC, 'b', 1, { window: 100 })),
      ]);
      for (const call of calls) {
        expect(call.error).toMatchObject({ code: 'ERR_DELAY_DRIVER_UNAVAILABLE' });
        expect(call.ms).toBeLessThan(COMMAND_TIMEOUT_MS + SLACK_MS);
      }
      const health = await timed(() => delay.health());
      expect(health.ms).toBeLessThan(2_000 + SLACK_MS);
    } finally {
      server.resume();
    }
    await delay.schedule(TOPIC, 'after', { delay: 100 });
    await pollUntil(() => handlers.keys().includes('after') && handlers.keys().includes('before'), 'both runs', 10_000, 20);
  }, 30_000);

  it('a statement blocked on a lock settles within the bound; claims skip the locked row and run the others', async () => {
    const booted = await boot();
    app = booted.app;
    const { delay, handlers } = booted;
    // Connected and in its transaction first: the row is locked one round trip after it is written, long before it
    // is due (a second), however busy the machine.
    const blocker = new Client({ connectionString: server.url });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await delay.schedule(TOPIC, 'locked', { delay: 1_000 });
      await delay.schedule(TOPIC, 'free', { delay: 1_000 });
      await blocker.query(`SELECT 1 FROM ${schema}.actions WHERE key = 'locked' FOR UPDATE`);
      const cancel = await timed(() => delay.cancel(TOPIC, 'locked'));
      expect(cancel.error).toMatchObject({ code: 'ERR_DELAY_DRIVER_UNAVAILABLE' });
      expect(cancel.ms).toBeLessThan(COMMAND_TIMEOUT_MS + SLACK_MS);
      await pollUntil(() => handlers.keys().includes('free'), 'the run of the free row', 5_000, 20);
      expect(handlers.keys()).toEqual(['free']);
      // Nothing stalls: other calls go on while the lock is held.
      expect(await delay.schedule(TOPIC, 'meanwhile', { delay: 60_000 })).toMatchObject({ key: 'meanwhile' });
      // The cancel's statement may still wait on the server a little after its call gave up (the server's timeout counts
      // from when the statement arrived): were the lock released first, it would go on and delete the row.
      const waiting = `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()`;
      await pollUntil(async () => (await blocker.query<{ n: number }>(waiting)).rows[0].n === 0, 'the cancel ended on the server', 5_000, 20);
      await blocker.query('ROLLBACK');
    } finally {
      await blocker.end();
    }
    await pollUntil(() => handlers.keys().includes('locked'), 'the run of the row once unlocked', 5_000, 20);
    expect(handlers.runs.filter((run) => run.key === 'locked')).toEqual([{ key: 'locked', attempt: 1 }]);
  }, 30_000);

  it('calls queued behind writes of their key blocked on a lock settle within the bound; one whose time ran out is never sent', async () => {
    const booted = await boot();
    app = booted.app;
    const { delay } = booted;
    const blocker = new Client({ connectionString: server.url });
    await blocker.connect();
    let kept: { dueAt: Date };
    try {
      kept = await delay.schedule(TOPIC, 'kept', { delay: 60_000 });
      await blocker.query('BEGIN');
      await blocker.query(`SELECT 1 FROM ${schema}.actions WHERE key = 'kept' FOR UPDATE`);
      // Made together, so each waits for the one before it in the key's write order; the first waits on the lock.
      // Waiting counts against a call's bound: none takes longer than one commandTimeout, and the cancel, gathered
      // behind the others, is not sent once its time ran out.
      // The last one, made a tenth of the way in, gets its turn with a tenth of its time left: the server's limits
      // follow, so it does not wait on for the rest of a commandTimeout (0.9 s) after it gave up.
      const calls = await Promise.all([
        timed(() => delay.runNow(TOPIC, 'kept')),
        timed(() => delay.reschedule(TOPIC, 'kept', { delay: 120_000 })),
        timed(() => delay.reschedule(TOPIC, 'kept', { delay: 180_000 })),
        timed(() => delay.cancel(TOPIC, 'kept')),
        sleep(COMMAND_TIMEOUT_MS / 10).then(() => timed(() => delay.reschedule(TOPIC, 'kept', { delay: 240_000 }))),
      ]);
      for (const call of calls) {
        expect(call.error).toMatchObject({ code: 'ERR_DELAY_DRIVER_UNAVAILABLE' });
        expect(call.ms).toBeLessThan(COMMAND_TIMEOUT_MS + SLACK_MS);
      }
      // Nothing the calls sent goes on waiting on the server once they gave up (the server's limits follow each call's
      // bound): a statement still waiting on the lock would apply when it is released.
      const waiting = `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()`;
      await pollUntil(async () => (await blocker.query<{ n: number }>(waiting)).rows[0].n === 0, 'no statement of the calls waiting on the server', 600, 20);
      await blocker.query('ROLLBACK');
    } finally {
      await blocker.end();
    }
    await sleep(300);
    // Neither deleted nor moved by a call that gave up.
    expect((await delay.get(TOPIC, 'kept'))?.dueAt.getTime()).toBe(kept.dueAt.getTime());
  }, 30_000);

  it('connections black-holed: calls on them settle within the bound, new connections carry on, nothing committed is lost', async () => {
    proxy = await TcpFaultProxy.start(server.port);
    const booted = await boot({ url: urlOf(proxy.port) });
    app = booted.app;
    const { delay, handlers } = booted;
    await delay.schedule(TOPIC, 'before', { delay: 300 });
    proxy.blackhole();
    const calls = await Promise.all([timed(() => delay.schedule(TOPIC, 'a', { delay: 100 })), timed(() => delay.count(TOPIC)), timed(() => delay.get(TOPIC, 'before'))]);
    for (const call of calls) {
      // A call on a silent connection times out; one that got a fresh connection succeeds. Either way, in bounds.
      expect(call.ms).toBeLessThan(COMMAND_TIMEOUT_MS + SLACK_MS);
      if (call.error !== undefined) expect(call.error).toMatchObject({ code: 'ERR_DELAY_DRIVER_UNAVAILABLE' });
    }
    await delay.schedule(TOPIC, 'after', { delay: 100 });
    await pollUntil(() => handlers.keys().includes('after') && handlers.keys().includes('before'), 'the runs, on fresh connections', 10_000, 20);
  }, 30_000);

  it('a claim whose reply is lost is asked again and hands back what it took: same attempt, one run', async () => {
    proxy = await TcpFaultProxy.start(server.port);
    // Without the look at dead rows the instance makes every second: fewer statements besides the claims (the case
    // is about a claim's lost reply).
    const booted = await boot({ url: urlOf(proxy.port), lease: '10s', vacuum: false });
    app = booted.app;
    const { handlers } = booted;
    const other = await boot({ consume: false });
    producer = other.app;
    await sleep(300);
    // From now on no claim's reply reaches the consumer: it waits for it, gives up after commandTimeout and drops
    // that connection. Every claim is caught, whenever it goes out and on whichever connection, until the one that
    // took 'lost-reply' has committed.
    const held = proxy.holdReplies('.claim_taken($1::', 1_000);
    await other.delay.schedule(TOPIC, 'lost-reply', { delay: 50 });
    // The claim ran on the server (the row is leased) while no handler has run: its reply was lost.
    await pollUntil(async () => (await server.admin(`SELECT ${schema}.is_running(topic, token) AS running FROM ${schema}.actions WHERE key = 'lost-reply'`, [], true))[0]?.running === true, 'the claim to commit', 10_000, 20);
    held.stop();
    expect(handlers.runs).toEqual([]);
    await pollUntil(() => handlers.runs.length > 0, 'the run', 10_000, 20);
    await pollUntil(async () => (await other.delay.count(TOPIC)) === 0, 'the ack', 5_000, 20);
    expect(handlers.runs).toEqual([{ key: 'lost-reply', attempt: 1 }]);
    expect(held.at.length).toBeGreaterThan(0);
  }, 40_000);

  it('an instance that dies mid-run: its lease expires and another instance runs the action again as the next attempt', async () => {
    const config = { type: 'postgres' as const, connectionString: server.url, schema, commandTimeout: COMMAND_TIMEOUT_MS, lease: '1s', wakeCheck: '1s' };
    const doomed = new PostgresDriver(config);
    await doomed.connect();
    const taken: Delivery[] = [];
    // A consumer that never reports: the run is going on when the instance dies.
    await doomed.start({ topics: new Map([[TOPIC, 10]]), handle: (delivery) => new Promise(() => taken.push(delivery)) });
    await doomed.schedule({ topic: TOPIC, key: 'crash', due: { delayMs: 50 }, payload: undefined, ifExists: 'replace', maxPastMs: 86_400_000 });
    await pollUntil(() => taken.length > 0, 'the doomed run', 5_000, 10);
    // A crash: no hand-back, no renewals, connections gone.
    await doomed.close();

    const booted = await boot({ lease: '1s' });
    app = booted.app;
    await pollUntil(() => booted.handlers.runs.length > 0, 'the redelivery', 8_000, 20);
    expect(booted.handlers.runs).toEqual([{ key: 'crash', attempt: 2 }]);
  }, 30_000);
});
