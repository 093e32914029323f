// The postgres driver gathers the autocommit `schedule` calls, the
// `cancel` calls and the recurring steps (advanceSeries) of one tick for one topic into one statement. These tests make calls without awaiting
// them in between, so they share a tick, and check that each caller still
// gets exactly what it would have got alone, in the order the calls were
// made: its own result, its own refusal, the same error on a lost
// connection, a bound on a frozen server, and a notification only when the
// topic's earliest due time moves earlier.
import { Client } from 'pg';
import { PostgresDriver } from '../../libs/delay/src/drivers/postgres/postgres.driver';
import { AdvanceSeriesCommand, DueSpec, ScheduleCommand, ScheduleResult } from '../../libs/delay/src/interfaces/delay-driver.interface';
import { IfExists } from '../../libs/delay/src/interfaces/schedule-options.interface';
import { pollUntil, sleep } from '../conformance/support/driver-fixture';
import { TestPostgresServer } from '../support/postgres-server';
import { TcpFaultProxy } from './support/tcp-fault-proxy';

const TOPIC = 'pggather.t';
const MAX_PAST_MS = 60_000;
const COMMAND_TIMEOUT_MS = 1_000;
/** A call must settle within the command timeout; this much more is allowed for a busy machine. */
const SLACK_MS = 1_500;

type Outcome = { result: ScheduleResult } | { error: { code?: string; name?: string } };

function command(key: string, options: { due?: DueSpec; payload?: string; ifExists?: IfExists; topic?: string; maxPastMs?: number } = {}): ScheduleCommand {
  return {
    topic: options.topic ?? TOPIC,
    key,
    due: options.due ?? { delayMs: 60_000 },
    payload: options.payload,
    ifExists: options.ifExists ?? 'replace',
    maxPastMs: options.maxPastMs ?? MAX_PAST_MS,
  };
}

function outcome(promise: Promise<ScheduleResult>): Promise<Outcome> {
  return promise.then(
    (result) => ({ result }),
    (error: { code?: string; name?: string }) => ({ error }),
  );
}

/** What a result says, short: outcome and payload. */
function brief(settled: Outcome): string {
  if ('error' in settled) return `error ${settled.error.code ?? settled.error.name}`;
  return `${settled.result.outcome} ${settled.result.action.payload ?? '-'}`;
}

describe('postgres: schedule and cancel calls of one tick share one statement', () => {
  let server: TestPostgresServer;
  let proxy: TcpFaultProxy | undefined;
  const drivers: PostgresDriver[] = [];
  let schemas = 0;
  let schema: string;

  beforeAll(async () => {
    server = await TestPostgresServer.start();
  }, 60_000);

  afterAll(async () => {
    await server.dispose();
  });

  beforeEach(() => {
    schema = `gather_${process.pid}_${++schemas}`;
  });

  afterEach(async () => {
    proxy?.heal();
    for (const driver of drivers.splice(0)) await driver.close();
    await proxy?.close();
    proxy = undefined;
  });

  async function driver(url = server.url, commandTimeout = COMMAND_TIMEOUT_MS): Promise<PostgresDriver> {
    const made = new PostgresDriver({ type: 'postgres', connectionString: url, schema, commandTimeout });
    drivers.push(made);
    await made.connect();
    return made;
  }

  /** How many transactions wrote the topic's rows (each row's xmin): one for calls that shared a statement. */
  async function writers(): Promise<number> {
    const rows = await server.admin(`SELECT count(DISTINCT xmin::text)::integer AS n FROM ${schema}.actions`, [], true);
    return Number(rows[0].n);
  }

  /** Waits until a statement waits for a lock the backend `pid` holds. */
  async function blockedBy(pid: number, what: string): Promise<void> {
    const blocked = `SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1::int = ANY (pg_blocking_pids(pid))`;
    await pollUntil(async () => Number((await server.admin(blocked, [pid]))[0].n) === 1, what, 5_000);
  }

  /** Whether another transaction holds the row of `key` (FOR UPDATE NOWAIT refused with 55P03). */
  async function expectRowHeld(key: string): Promise<void> {
    await expect(server.admin(`SELECT 1 FROM ${schema}.actions WHERE key = $1 FOR UPDATE NOWAIT`, [key], true)).rejects.toMatchObject({ code: '55P03' });
  }

  it('schedule calls of one tick are one transaction; each gets its own result', async () => {
    const pg = await driver();
    const keys = Array.from({ length: 50 }, (_, n) => `k${n}`);
    const results = await Promise.all(keys.map((key, n) => pg.schedule(command(key, { payload: `"p${n}"`, due: { delayMs: 60_000 + n } }))));
    expect(results.map((result) => [result.outcome, result.action.key, result.action.payload])).toEqual(keys.map((key, n) => ['created', key, `"p${n}"`]));
    expect(results[1].action.dueAt - results[0].action.dueAt).toBe(1);
    expect(await writers()).toBe(1);
    expect(await pg.count(TOPIC)).toBe(50);
  });

  it('calls on one key apply in the order made, each seeing the one before (keep, replace, reschedule, cancel, get)', async () => {
    const pg = await driver();
    const atMs = Date.now() + 3_600_000;
    const calls = [
      outcome(pg.schedule(command('k', { payload: '"a"' }))),
      outcome(pg.schedule(command('k', { payload: '"b"', ifExists: 'keep' }))),
      outcome(pg.schedule(command('k', { payload: '"c"', due: { atMs } }))),
      outcome(pg.schedule(command('k', { payload: '"d"', ifExists: 'keep' }))),
    ];
    // A reschedule, a read and a cancel made in the same tick come after the calls before them, and before those after.
    const moved = pg.reschedule({ topic: TOPIC, key: 'k', due: { atMs: atMs + 1_000 }, maxPastMs: MAX_PAST_MS });
    const read = pg.get(TOPIC, 'k');
    calls.push(outcome(pg.schedule(command('k', { payload: '"e"', ifExists: 'keep' }))));
    const cancelled = pg.cancel(TOPIC, 'k');
    calls.push(outcome(pg.schedule(command('k', { payload: '"f"', ifExists: 'keep' }))));
    calls.push(outcome(pg.schedule(command('k', { payload: '"g"' }))));
    const settled = await Promise.all(calls);
    expect(settled.map(brief)).toEqual(['created "a"', 'kept "a"', 'replaced "c"', 'kept "c"', 'kept "c"', 'created "f"', 'replaced "g"']);
    expect(settled[2]).toMatchObject({ result: { action: { dueAt: atMs } } });
    expect(await moved).toMatchObject({ payload: '"c"', dueAt: atMs + 1_000 });
    expect(await read).toMatchObject({ payload: '"c"', dueAt: atMs + 1_000 });
    expect(settled[4]).toMatchObject({ result: { action: { dueAt: atMs + 1_000 } } });
    expect(await cancelled).toBe(true);
    expect(await pg.get(TOPIC, 'k')).toMatchObject({ payload: '"g"', attempt: 1 });
    expect(await pg.count(TOPIC)).toBe(1);
  });

  it('a refused call fails alone: the others of its tick are applied, in order, and get their own results', async () => {
    const pg = await driver();
    await pg.collect({ topic: TOPIC, key: 'batch', item: '1', windowMs: 60_000, maxWaitMs: undefined, slide: false, maxItems: 100 });
    const now = Date.now();
    const settled = await Promise.all([
      outcome(pg.schedule(command('a', { payload: '"a1"' }))),
      outcome(pg.schedule(command('past', { due: { atMs: now - 10 * MAX_PAST_MS } }))),
      outcome(pg.schedule(command('a', { payload: '"a2"', ifExists: 'keep' }))),
      outcome(pg.schedule(command('batch', { payload: '"x"' }))),
      outcome(pg.schedule(command('far', { due: { atMs: now + 2 * pg.horizonMs } }))),
      outcome(pg.schedule(command('a', { payload: '"a3"' }))),
      outcome(pg.schedule(command('b', { payload: '"b1"' }))),
    ]);
    expect(settled.map(brief)).toEqual([
      'created "a1"',
      'error ERR_DELAY_DUE_TIME_OUT_OF_RANGE',
      'kept "a1"',
      'error ERR_DELAY_KIND_CONFLICT',
      'error ERR_DELAY_DUE_TIME_OUT_OF_RANGE',
      'replaced "a3"',
      'created "b1"',
    ]);
    expect(await pg.get(TOPIC, 'a')).toMatchObject({ payload: '"a3"' });
    expect(await pg.get(TOPIC, 'past')).toBeNull();
    expect(await pg.get(TOPIC, 'far')).toBeNull();
    expect(await pg.get(TOPIC, 'batch')).toMatchObject({ items: ['1'] });
    expect(await pg.count(TOPIC)).toBe(3);
    // A lone call's refusal is its own, as before.
    await expect(pg.schedule(command('batch'))).rejects.toMatchObject({ code: 'ERR_DELAY_KIND_CONFLICT' });
  });

  it('cancels of one tick share one statement; each gets its own answer, a key given twice is removed by the first', async () => {
    const pg = await driver();
    await Promise.all(['a', 'b', 'locked'].map((key) => pg.schedule(command(key))));
    // A closed batch (maxItems reached) that has not started: cancel(key) reaches it, as it reaches a single action.
    await pg.collect({ topic: TOPIC, key: 'full', item: '1', windowMs: 60_000, maxWaitMs: undefined, slide: false, maxItems: 1 });
    const blocker = new Client({ connectionString: server.url });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query(`SELECT 1 FROM ${schema}.actions WHERE key = 'locked' FOR UPDATE`);
      const settled: string[] = [];
      const calls = ['a', 'missing', 'locked', 'a', 'full', 'b'].map((key, n) => pg.cancel(TOPIC, key).then((removed) => settled.push(`${n} ${key} ${removed}`)));
      await sleep(300);
      // One statement: the cancels of keys nobody holds wait with the one that waits for the lock.
      expect(settled).toEqual([]);
      await blocker.query('ROLLBACK');
      await Promise.all(calls);
      expect(settled.sort()).toEqual(['0 a true', '1 missing false', '2 locked true', '3 a false', '4 full true', '5 b true']);
    } finally {
      await blocker.end();
    }
    expect(await pg.count(TOPIC)).toBe(0);
  });

  it('gathered cancels lock their keys in code point order; one the server aborts to end a deadlock is sent again, each call still answered', async () => {
    // Cancels of b and a, made in that order, share a statement that locks a first, then b. Another transaction holds
    // b, then asks for a. The server ends that cycle by aborting the cancels' statement: its backend looks for a cycle
    // once it has waited deadlock_timeout (3 s on the driver's connections, so the other transaction's request for a
    // is surely waiting by then), while the other transaction would look only after 30 s. Neither call alone could
    // have been in a cycle, so neither caller may see it: the statement, which applied nothing, goes again within
    // commandTimeout.
    const url = new URL(server.url);
    url.searchParams.set('options', '-c deadlock_timeout=3000');
    const pg = await driver(url.href, 10_000);
    await Promise.all(['a', 'b'].map((key) => pg.schedule(command(key))));
    const deadlocks = async (): Promise<number> =>
      Number((await server.admin('SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()', [], true))[0].deadlocks);
    const deadlocksBefore = await deadlocks();
    const other = new Client({ connectionString: server.url });
    await other.connect();
    try {
      const otherPid = Number((await other.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
      await other.query('BEGIN');
      await other.query(`SET LOCAL deadlock_timeout = '30s'`);
      await other.query(`SELECT 1 FROM ${schema}.actions WHERE key = 'b' FOR UPDATE`);
      const calls = ['b', 'a'].map((key) => pg.cancel(TOPIC, key).then((removed) => ({ removed }), (error: { code?: string }) => ({ error: error.code })));
      await blockedBy(otherPid, 'the cancels waiting for b');
      // The statement holds a while it waits for b: it took a first, though the calls came in the order b, a.
      await expectRowHeld('a');
      // a is locked by the cancels' statement: this waits until the server aborts it, and then finds a still there.
      const lockedA = await other.query(`SELECT 1 FROM ${schema}.actions WHERE key = 'a' FOR UPDATE`);
      expect(lockedA.rowCount).toBe(1);
      await other.query('COMMIT');
      expect(await Promise.all(calls)).toEqual([{ removed: true }, { removed: true }]);
    } finally {
      await other.end();
    }
    expect(await pg.count(TOPIC)).toBe(0);
    // The cycle did happen: the server counted the deadlock it broke.
    await pollUntil(async () => (await deadlocks()) > deadlocksBefore, 'the deadlock in the statistics', 5_000, 50);
  });

  it('a statement the server aborts again and again: sent again, spaced out, until commandTimeout; then each call fails with DriverUnavailableError and nothing is applied', async () => {
    const pg = await driver();
    await pg.schedule(command('before'));
    const sql = (text: string): Promise<Array<Record<string, unknown>>> => server.admin(text, [], true);
    // A trigger that aborts every write to the actions table as the server does to end a deadlock, while a sequence
    // (whose values no rollback takes back) is under the limit the test sets: the first `limit` tries are aborted.
    const abortFirst = async (limit: number): Promise<void> => {
      await sql(`DROP TRIGGER IF EXISTS aborts ON ${schema}.actions`);
      await sql(`DROP SEQUENCE IF EXISTS ${schema}.aborts`);
      await sql(`CREATE SEQUENCE ${schema}.aborts`);
      await sql(
        `CREATE OR REPLACE FUNCTION ${schema}.abort_writes() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ` +
          `IF nextval('${schema}.aborts') <= ${limit} THEN RAISE EXCEPTION 'aborted by the test' USING ERRCODE = '40P01'; END IF; RETURN NEW; END $$`,
      );
      await sql(`CREATE TRIGGER aborts BEFORE INSERT OR UPDATE ON ${schema}.actions FOR EACH ROW EXECUTE FUNCTION ${schema}.abort_writes()`);
    };
    const tries = async (): Promise<number> => Number((await sql(`SELECT last_value FROM ${schema}.aborts`))[0].last_value);
    try {
      // Aborted three times: the fourth try applies it, and the callers never hear of the aborts.
      await abortFirst(3);
      const settled = await Promise.all(['a', 'b'].map((key) => outcome(pg.schedule(command(key, { payload: `"${key}"` })))));
      expect(settled.map(brief)).toEqual(['created "a"', 'created "b"']);
      expect(await tries()).toBeGreaterThanOrEqual(4);

      // Aborted on every try: the calls fail within their bound, with the typed error, having applied nothing.
      await abortFirst(1_000_000);
      const started = performance.now();
      const failed = await Promise.all(['c', 'd'].map((key) => outcome(pg.schedule(command(key)))));
      const elapsed = performance.now() - started;
      expect(failed.map(brief)).toEqual(['error ERR_DELAY_DRIVER_UNAVAILABLE', 'error ERR_DELAY_DRIVER_UNAVAILABLE']);
      expect(elapsed).toBeLessThan(COMMAND_TIMEOUT_MS + SLACK_MS);
      // Sent again until the bound was nearly out, but spaced out (2 ms doubling to 100 ms): not thousands of tries.
      expect(elapsed).toBeGreaterThan(COMMAND_TIMEOUT_MS / 2);
      const triedWhenFailed = await tries();
      expect(triedWhenFailed).toBeLessThan(40);
      // Nothing goes on after the calls failed: no try is sent later (the calls' own timer settles them at the bound
      // whatever the statement does, so this is what shows the tries stopped there).
      await sleep(300);
      expect(await tries()).toBe(triedWhenFailed);
    } finally {
      await sql(`DROP TRIGGER IF EXISTS aborts ON ${schema}.actions`);
    }
    // And nothing of them was applied, now that writes would go through.
    await sleep(300);
    expect(await pg.get(TOPIC, 'c')).toBeNull();
    expect(await pg.get(TOPIC, 'd')).toBeNull();
    expect((await pg.get(TOPIC, 'a'))?.payload).toBe('"a"');
    expect(await pg.count(TOPIC)).toBe(3);
  });

  it('gathered schedules lock their keys in code point order too, and answer in call order', async () => {
    const pg = await driver(server.url, 10_000);
    await Promise.all(['a', 'b'].map((key) => pg.schedule(command(key))));
    const other = new Client({ connectionString: server.url });
    await other.connect();
    try {
      const otherPid = Number((await other.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
      await other.query('BEGIN');
      await other.query(`SELECT 1 FROM ${schema}.actions WHERE key = 'b' FOR UPDATE`);
      const calls = Promise.all(['b', 'a'].map((key) => pg.schedule(command(key, { payload: `"${key}2"` }))));
      await blockedBy(otherPid, 'the schedules waiting for b');
      // Called in the order b, a: the statement replaced a first, and holds it while it waits for b.
      await expectRowHeld('a');
      await other.query('COMMIT');
      expect((await calls).map((result) => [result.outcome, result.action.key, result.action.payload])).toEqual([
        ['replaced', 'b', '"b2"'],
        ['replaced', 'a', '"a2"'],
      ]);
    } finally {
      await other.end();
    }
  });

  it('topics and maxPast values apart go in statements of their own, each call still answered', async () => {
    const pg = await driver();
    const settled = await Promise.all([
      outcome(pg.schedule(command('a', { topic: 'pggather.one' }))),
      outcome(pg.schedule(command('a', { topic: 'pggather.two' }))),
      outcome(pg.schedule(command('b', { topic: 'pggather.one', maxPastMs: 1 }))),
      outcome(pg.schedule(command('c', { topic: 'pggather.one' }))),
    ]);
    expect(settled.map(brief)).toEqual(['created -', 'created -', 'created -', 'created -']);
    expect(await pg.count('pggather.one')).toBe(3);
    expect(await pg.count('pggather.two')).toBe(1);
  });

  it('notifies once per tick, and only when the earliest due time moves earlier', async () => {
    const pg = await driver();
    const listener = new Client({ connectionString: server.url });
    await listener.connect();
    const heard: string[] = [];
    listener.on('notification', (message) => heard.push(message.payload ?? ''));
    try {
      await listener.query(`LISTEN ${schema}`);
      const base = Date.now() + 3_600_000;
      await Promise.all(Array.from({ length: 20 }, (_, n) => pg.schedule(command(`early${n}`, { due: { atMs: base + n } }))));
      await pollUntil(() => heard.length > 0, 'the notification', 5_000, 10);
      // Later than the earliest: no notification.
      await Promise.all(Array.from({ length: 20 }, (_, n) => pg.schedule(command(`late${n}`, { due: { atMs: base + 1_000 + n } }))));
      // Earlier again: one more.
      await Promise.all(Array.from({ length: 20 }, (_, n) => pg.schedule(command(`earlier${n}`, { due: { atMs: base - 1_000 + n } }))));
      await pollUntil(() => heard.length > 1, 'the second notification', 5_000, 10);
      await sleep(200);
      // Two notifications, each with the topic's tag (see wake_tag in the migrations).
      const [{ tag }] = await server.admin(`SELECT ${schema}.wake_tag($1) AS tag`, [TOPIC], true);
      expect(heard).toEqual([tag, tag]);
    } finally {
      await listener.end();
    }
  });

  it('recurring steps of one tick are one transaction; each gets its own result (created, skipped, not applied)', async () => {
    const pg = await driver();
    const at = Date.now() + 3_600_000;
    const keys = Array.from({ length: 20 }, (_, n) => `s${n}`);
    const tick = (last: number): string => `@1|i|1000|0||||${last}|`;
    const step = (key: string, n: number, overrides: Partial<AdvanceSeriesCommand>): AdvanceSeriesCommand => ({
      topic: TOPIC,
      key,
      expect: { absent: true },
      overlap: 'skip',
      occurrences: [],
      next: { due: { atMs: at + n }, payload: tick(0) },
      ...overrides,
    });
    const armed = await Promise.all(keys.map((key, n) => pg.advanceSeries(step(key, n, {}))));
    expect(armed.every((result) => result.applied)).toBe(true);
    expect(await writers()).toBe(1);
    // One step each, in one tick: an occurrence for each, one held back by the previous occurrence (overlap 'skip'),
    // one whose condition no longer holds. First, s1 gets an occurrence still waiting.
    const first = await pg.advanceSeries(
      step('s1', 1, { expect: { payload: tick(0) }, occurrences: [{ key: 's1\u001e1', due: { atMs: at }, payload: '"one"' }], next: { due: { atMs: at + 1 }, payload: tick(1) } }),
    );
    expect(first.created).toEqual(['s1\u001e1']);
    const results = await Promise.all(
      keys.map((key, n) =>
        pg.advanceSeries(
          step(key, n, {
            expect: { payload: n === 2 ? 'not its payload' : tick(n === 1 ? 1 : 0) },
            occurrences: [{ key: `${key}\u001e2`, due: { atMs: at + 10 }, payload: `"${key}"` }],
            next: { due: { atMs: at + 100 + n }, payload: tick(2) },
          }),
        ),
      ),
    );
    expect(results[0]).toEqual({ applied: true, created: ['s0\u001e2'], skipped: [], cancelled: [] });
    expect(results[1]).toMatchObject({ applied: true, created: [], skipped: ['s1\u001e2'], blockedBy: { occurrenceKey: 's1\u001e1', state: 'waiting' } });
    expect(results[2]).toEqual({ applied: false, created: [], skipped: [], cancelled: [] });
    expect(results.slice(3).every((result, n) => result.applied && result.created[0] === `${keys[n + 3]}\u001e2`)).toBe(true);
    // The 18 occurrences and 19 re-armed ticks of that tick: one transaction (s1's first occurrence, s2's tick: others).
    const [{ n }] = await server.admin(`SELECT count(DISTINCT xmin::text)::integer AS n FROM ${schema}.actions WHERE member LIKE '%' || chr(30) || '2' OR (tick AND member NOT IN ('s2'))`, [], true);
    expect(Number(n)).toBe(1);
    expect((await pg.get(TOPIC, 's0'))?.dueAt).toBe(at + 100);
    expect((await pg.get(TOPIC, 's2'))?.dueAt).toBe(at + 2);
    expect(await pg.count(TOPIC)).toBe(20 + 1 + 18);
  });

  it('the server frozen: every gathered call settles within the command timeout with DriverUnavailableError', async () => {
    const pg = await driver();
    await pg.schedule(command('warm'));
    server.pause();
    let settled: Array<{ error: unknown; ms: number }>;
    try {
      const started = performance.now();
      settled = await Promise.all(
        Array.from({ length: 20 }, (_, n) =>
          pg.schedule(command(`frozen${n}`)).then(
            () => ({ error: undefined, ms: performance.now() - started }),
            (error: unknown) => ({ error, ms: performance.now() - started }),
          ),
        ),
      );
    } finally {
      server.resume();
    }
    for (const call of settled) {
      expect(call.error).toMatchObject({ code: 'ERR_DELAY_DRIVER_UNAVAILABLE' });
      expect(call.ms).toBeLessThan(COMMAND_TIMEOUT_MS + SLACK_MS);
    }
    // Thawed, the driver carries on.
    expect(await pg.schedule(command('after'))).toMatchObject({ outcome: 'created' });
  }, 30_000);

  it('the connection reset under a gathered statement: each call gets the DriverUnavailableError a single call gets', async () => {
    proxy = await TcpFaultProxy.start(server.port);
    const url = new URL(server.url);
    url.port = String(proxy.port);
    const pg = await driver(url.toString());
    await pg.schedule(command('warm'));
    const reset = proxy.resetOnReply(`${schema}.schedule(`);
    const settled = await Promise.all(Array.from({ length: 10 }, (_, n) => outcome(pg.schedule(command(`lost${n}`)))));
    expect(reset.at).toHaveLength(1);
    expect(settled.map(brief)).toEqual(Array.from({ length: 10 }, () => 'error ERR_DELAY_DRIVER_UNAVAILABLE'));
    // The statement committed as a whole or not at all; the calls are safe to repeat.
    const again = await Promise.all(Array.from({ length: 10 }, (_, n) => pg.schedule(command(`lost${n}`))));
    expect(new Set(again.map((result) => result.outcome)).size).toBe(1);
    expect(await pg.count(TOPIC)).toBe(11);
  }, 30_000);
});
