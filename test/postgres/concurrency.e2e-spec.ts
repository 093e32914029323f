// The postgres driver under concurrent transactions: 64 callers, each in a
// real transaction of its own (a pg PoolClient in BEGIN ... COMMIT or
// ROLLBACK) or without one, replacing, cancelling, rescheduling and keeping
// the same 8 keys at once, seeded, with due times a few hundred ms ahead, so
// actions fire while the writes go on.
//
// The order in which writes committed comes from the database itself: a
// trigger of the test's on the driver's table logs every row change (which
// connection made it, its transaction id, the row before and after) with a
// sequence number. Writes to one row wait for each other's row lock, so per
// key the log's order is the commit order, and a rolled-back write takes its
// log rows with it. Replaying that log per key against the runs the handler
// saw asserts:
// - every run is an arming some committed write made, claimed at or after
//   its due time, with its payload and due time, at most once;
// - what a key's last committed write left runs, exactly once, on time; a key
//   whose last committed write was a cancel runs nothing after it;
// - an arming is claimed within LATE_LIMIT_MS of its due time unless a write
//   superseded it first (no missed wake-up);
// - nothing of a transaction that rolled back (or failed) was written, and
//   each committed call's reply is what its transaction wrote.
import { INestApplication, Injectable } from '@nestjs/common';
import { DelayContext, DelayService, OnDelayExpired, PendingAction } from 'nestjs-delay';
import { Pool, PoolClient } from 'pg';
import { bootDelayApp, pollUntil, sleep } from '../conformance/support/driver-fixture';
import { Random } from '../instances/support/random';
import { sqlStateOf } from '../../libs/delay/src/transactions/sql-state';
import { TestPostgresServer } from '../support/postgres-server';

const TOPIC = 'pgconc.key';
const SEED = Number(process.env.DELAY_RANDOM_SEED ?? 20_261_126);
const CALLERS = 64;
const KEYS = Array.from({ length: 8 }, (_, n) => `k${n}`);
/** Generous on a loaded 2-core machine; a missed wake-up shows as seconds, or never. */
const LATE_LIMIT_MS = 1_500;
/**
 * During the writes a due row may be held by transactions that then roll back (and by the queue of
 * writers behind them), and claims skip held rows and look again backing off up to 1 s. An arming
 * superseded unclaimed is late only past this.
 */
const CONTENDED_LATE_LIMIT_MS = 3_000;
/** The driver's own connections say so (application_name); the test's say 'caller' and 'producer'. */
const CONSUMER_APP = 'nestjs-delay';

interface Payload {
  readonly armId: string;
}

interface Run {
  readonly key: string;
  readonly armId: string;
  readonly dueAt: number;
  readonly firedAt: number;
  readonly attempt: number;
}

@Injectable()
class Handlers {
  readonly runs: Run[] = [];

  @OnDelayExpired(TOPIC, { concurrency: 50 })
  run(context: DelayContext<Payload>): void {
    this.runs.push({ key: context.key, armId: context.payload?.armId ?? '?', dueAt: context.dueAt.getTime(), firedAt: context.firedAt.getTime(), attempt: context.attempt });
  }
}

type OpKind = 'replace' | 'keep' | 'cancel' | 'reschedule';

interface OpRecord {
  readonly key: string;
  readonly kind: OpKind;
  readonly armId?: string;
  /** schedule / reschedule: the action the call returned (armId and due time); cancel: whether it removed one. */
  readonly result: { armId: string | undefined; dueAt: number } | boolean | null;
}

interface TxRecord {
  readonly name: string;
  readonly mode: 'commit' | 'rollback' | 'none';
  readonly ops: OpRecord[];
  /** The caller's transaction id (txid_current()), for transactions. */
  xid?: string;
  /** committed: COMMIT returned (or, without a transaction, every call did); failed: an error, then ROLLBACK. */
  outcome?: 'committed' | 'rolled back' | 'failed';
  /** When COMMIT returned (Date.now(), the database's clock too: same machine). */
  committedAt?: number;
  error?: string;
}

/** One logged row change of the driver's actions table. */
interface LogRow {
  readonly seq: number;
  readonly xid: string;
  readonly app: string;
  readonly op: 'INSERT' | 'UPDATE' | 'DELETE';
  readonly key: string;
  readonly oldState: string | null;
  readonly newState: string | null;
  readonly oldToken: string | null;
  readonly newToken: string | null;
  readonly armId: string | null;
  readonly dueAt: number | null;
  readonly at: number;
}

async function installLog(server: TestPostgresServer, schema: string): Promise<void> {
  await server.admin(
    `CREATE TABLE ${schema}.test_log (seq bigserial PRIMARY KEY, xid bigint NOT NULL, app text NOT NULL, op text NOT NULL, key text NOT NULL,
       old_state text, new_state text, old_token bigint, new_token bigint, payload text, due_at bigint, at_ms bigint NOT NULL);
     CREATE FUNCTION ${schema}.test_log_change() RETURNS trigger LANGUAGE plpgsql AS $fn$
     BEGIN
       -- A cancel or reschedule that finds no action probes for a first-time arming in flight with a row of token 0,
       -- deleted by the same statement: it never commits, and is no change.
       IF (TG_OP = 'DELETE' AND OLD.token = 0) OR (TG_OP <> 'DELETE' AND NEW.token = 0) THEN RETURN NULL; END IF;
       INSERT INTO ${schema}.test_log (xid, app, op, key, old_state, new_state, old_token, new_token, payload, due_at, at_ms)
       VALUES (txid_current(), current_setting('application_name'), TG_OP,
         CASE WHEN TG_OP = 'DELETE' THEN OLD.key ELSE NEW.key END,
         CASE WHEN TG_OP = 'INSERT' THEN NULL WHEN ${schema}.is_running(OLD.topic, OLD.token) THEN 'running' ELSE 'waiting' END,
         CASE WHEN TG_OP = 'DELETE' THEN NULL WHEN ${schema}.is_running(NEW.topic, NEW.token) THEN 'running' ELSE 'waiting' END,
         CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE OLD.token END, CASE WHEN TG_OP = 'DELETE' THEN NULL ELSE NEW.token END,
         CASE WHEN TG_OP = 'DELETE' THEN OLD.payload ELSE NEW.payload END, CASE WHEN TG_OP = 'DELETE' THEN OLD.due_at ELSE NEW.due_at END,
         floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint);
       RETURN NULL;
     END $fn$;
     CREATE TRIGGER test_log AFTER INSERT OR UPDATE OR DELETE ON ${schema}.actions FOR EACH ROW EXECUTE FUNCTION ${schema}.test_log_change();
     -- A claim writes nothing to the rows it takes: it records them in a runs row, logged as each row going from waiting to running.
     CREATE FUNCTION ${schema}.test_log_claim() RETURNS trigger LANGUAGE plpgsql AS $fn$
     BEGIN
       INSERT INTO ${schema}.test_log (xid, app, op, key, old_state, new_state, old_token, new_token, payload, due_at, at_ms)
       SELECT txid_current(), current_setting('application_name'), 'UPDATE', a.key, 'waiting', 'running', a.token, a.token, a.payload, a.due_at,
         floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint
       FROM unnest(NEW.members, NEW.tokens) AS u(member, token) JOIN ${schema}.actions a ON a.topic = NEW.topic AND a.member = u.member AND a.token = u.token;
       RETURN NULL;
     END $fn$;
     CREATE TRIGGER test_log_claim AFTER INSERT ON ${schema}.runs FOR EACH ROW EXECUTE FUNCTION ${schema}.test_log_claim();`,
    [],
    true,
  );
}

async function readLog(server: TestPostgresServer, schema: string): Promise<LogRow[]> {
  const rows = await server.admin(`SELECT * FROM ${schema}.test_log ORDER BY seq`, [], true);
  return rows.map((row) => {
    const payload = row.payload === null ? null : (JSON.parse(String(row.payload)) as Payload);
    return {
      seq: Number(row.seq),
      xid: String(row.xid),
      app: String(row.app),
      op: String(row.op) as LogRow['op'],
      key: String(row.key),
      oldState: row.old_state === null ? null : String(row.old_state),
      newState: row.new_state === null ? null : String(row.new_state),
      oldToken: row.old_token === null ? null : String(row.old_token),
      newToken: row.new_token === null ? null : String(row.new_token),
      armId: payload?.armId ?? null,
      dueAt: row.due_at === null ? null : Number(row.due_at),
      at: Number(row.at_ms),
    };
  });
}

function snapshot(action: PendingAction<Payload> | null): OpRecord['result'] {
  return action === null ? null : { armId: action.payload?.armId, dueAt: action.dueAt.getTime() };
}

/** One arming in a key's log: a write that left the row waiting under a token. */
interface Arming {
  readonly armId: string;
  readonly dueAt: number;
  readonly token: string;
  readonly by: LogRow;
  claimedBy?: LogRow;
}

interface KeyVerdict {
  readonly violations: string[];
  /** The arming the key's last committed caller write left, if it armed one. */
  readonly final: Arming | undefined;
  readonly claims: Arming[];
  readonly supersededUnrun: number;
  readonly cancelledWhileRunning: number;
}

/** Replays one key's log, in commit order. `committedAt` tells when a caller's transaction committed (an arming is claimable from then). */
function replayKey(key: string, log: readonly LogRow[], committedAt: (row: LogRow) => number): KeyVerdict {
  const violations: string[] = [];
  const fail = (row: LogRow, text: string): void => {
    violations.push(`${key} @${row.seq} (${row.app} ${row.op}): ${text}`);
  };
  let current: Arming | undefined;
  let final: Arming | undefined;
  const claims: Arming[] = [];
  let supersededUnrun = 0;
  let cancelledWhileRunning = 0;
  const endCurrent = (row: LogRow): void => {
    if (!current) return;
    if (current.claimedBy) {
      cancelledWhileRunning++;
    } else {
      supersededUnrun++;
      const dueFrom = Math.max(current.dueAt, committedAt(current.by));
      if (row.at > dueFrom + CONTENDED_LATE_LIMIT_MS) fail(row, `${current.armId}@${current.dueAt} was claimable ${row.at - dueFrom} ms before this write ended it, unclaimed (a missed wake-up?)`);
    }
    current = undefined;
  };
  for (const row of log) {
    if (row.app === CONSUMER_APP) {
      if (row.op === 'UPDATE' && row.oldState === 'waiting' && row.newState === 'running') {
        if (!current || current.token !== row.oldToken || current.claimedBy) {
          fail(row, `a claim of token ${row.oldToken}, but the pending arming is ${current ? `${current.armId} token ${current.token}` : 'none'}`);
        } else {
          if (row.at < current.dueAt) fail(row, `claimed ${current.dueAt - row.at} ms early`);
          current.claimedBy = row;
          claims.push(current);
        }
      } else if (row.op === 'DELETE' && row.oldState === 'running') {
        if (!current?.claimedBy || current.token !== row.oldToken) fail(row, `a completion of token ${row.oldToken}, which is not the running arming`);
        current = undefined;
      } else if (!(row.op === 'UPDATE' && row.oldState === 'running' && row.newState === 'running' && row.oldToken === row.newToken)) {
        // Lease renewals are the only other consumer write; a revival would be a redelivery with no crash.
        fail(row, `an unexpected consumer write: ${row.oldState} -> ${row.newState}, token ${row.oldToken} -> ${row.newToken}`);
      }
      continue;
    }
    // A caller's write (in its transaction, or the producer's own): arms, re-arms or removes the key's action.
    endCurrent(row);
    final = undefined;
    if (row.op !== 'DELETE') {
      if (row.newState !== 'waiting' || row.newToken === null || row.dueAt === null || row.armId === null) {
        fail(row, `a caller write left ${row.newState} token ${row.newToken}`);
        continue;
      }
      current = { armId: row.armId, dueAt: row.dueAt, token: row.newToken, by: row };
      final = current;
    }
  }
  if (current && !current.claimedBy) violations.push(`${key}: ${current.armId}@${current.dueAt} is still pending at the end (lost)`);
  return { violations, final, claims, supersededUnrun, cancelledWhileRunning };
}

describe('postgres: concurrent transactions on a few keys', () => {
  let server: TestPostgresServer;
  let callers: Pool;
  let producerPool: Pool;
  const apps: INestApplication[] = [];
  let schemas = 0;

  beforeAll(async () => {
    server = await TestPostgresServer.start();
    callers = new Pool({ connectionString: server.url, max: CALLERS + 4, application_name: 'caller' });
    producerPool = new Pool({ connectionString: server.url, max: 10, application_name: 'producer' });
  }, 60_000);

  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });

  afterAll(async () => {
    await callers.end();
    await producerPool.end();
    await server.dispose();
  });

  /** A consuming instance on the driver's own pool, and a producer on the test's pool (its connections named 'producer'). */
  async function boot(schema: string, commandTimeout = '5s'): Promise<{ delay: DelayService; handlers: Handlers }> {
    const consumer = await bootDelayApp({ driver: { type: 'postgres', connectionString: server.url, schema, wakeCheck: '2s' }, shutdownTimeout: '1s' }, [Handlers]);
    apps.push(consumer);
    const producer = await bootDelayApp({ driver: { type: 'postgres', pool: producerPool, schema, commandTimeout }, consume: false, shutdownTimeout: '1s' }, []);
    apps.push(producer);
    return { delay: producer.get(DelayService), handlers: consumer.get(Handlers) };
  }

  it(`${CALLERS} callers replace, keep, cancel, reschedule and roll back ${KEYS.length} keys at once: what runs is what committed last, once, on time (seed ${SEED})`, async () => {
    const schema = `conc_${process.pid}_${++schemas}`;
    // Calls wait in line behind the row locks of other callers' open transactions (8 keys, 64 callers): on a loaded
    // machine a line can take longer than the default 5 s. This test is about what commits and runs, not about that
    // bound (tested below), so it gives the calls room.
    const { delay, handlers } = await boot(schema, '30s');
    await installLog(server, schema);
    const random = new Random(SEED);
    const records: TxRecord[] = [];
    const TXS_PER_CALLER = 5;

    const one = async (record: TxRecord, kind: OpKind, key: string, transaction: PoolClient | undefined, armId: string): Promise<void> => {
      const delayMs = random.int(200, 800);
      const options = transaction ? { transaction } : {};
      let result: OpRecord['result'];
      if (kind === 'replace' || kind === 'keep') {
        result = snapshot(await delay.schedule<Payload>(TOPIC, key, { delay: delayMs, payload: { armId }, ifExists: kind, ...options }));
      } else if (kind === 'reschedule') {
        result = snapshot(await delay.reschedule<Payload>(TOPIC, key, { delay: delayMs, ...options }));
      } else {
        result = await delay.cancel(TOPIC, key, options);
      }
      record.ops.push({ key, kind, ...(kind === 'replace' || kind === 'keep' ? { armId } : {}), result });
    };

    const caller = async (n: number): Promise<void> => {
      for (let t = 0; t < TXS_PER_CALLER; t++) {
        const mode = random.weighted<TxRecord['mode']>([['commit', 6], ['rollback', 2], ['none', 2]]);
        const record: TxRecord = { name: `c${n}.t${t}`, mode, ops: [] };
        records.push(record);
        // Mostly one key per transaction; some take two or three, in key order, as an application avoids deadlocks.
        const length = mode === 'none' ? 1 : random.weighted([[1, 14], [2, 5], [3, 1]]);
        const plan = Array.from({ length }, () => ({
          key: KEYS[random.int(0, KEYS.length - 1)],
          kind: random.weighted<OpKind>([['replace', 4], ['keep', 1], ['cancel', 2], ['reschedule', 2]]),
          pauseMs: random.int(0, 10),
        })).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
        // Spread over a few seconds, so armings come due and run while others are still being written.
        await sleep(random.int(0, 800));
        if (mode === 'none') {
          try {
            await one(record, plan[0].kind, plan[0].key, undefined, `${record.name}.0`);
            record.outcome = 'committed';
          } catch (error) {
            record.outcome = 'failed';
            record.error = String(error);
          }
          continue;
        }
        const client = await callers.connect();
        try {
          await client.query('BEGIN');
          record.xid = String((await client.query<{ xid: string }>('SELECT txid_current()::text AS xid')).rows[0].xid);
          for (const [i, step] of plan.entries()) {
            await one(record, step.kind, step.key, client, `${record.name}.${i}`);
            // Holding the transaction open a little widens the windows in which others wait on its row locks.
            await sleep(step.pauseMs);
          }
          await client.query(mode === 'commit' ? 'COMMIT' : 'ROLLBACK');
          record.outcome = mode === 'commit' ? 'committed' : 'rolled back';
          record.committedAt = Date.now();
        } catch (error) {
          // A deadlock between two transactions that took the same keys in another order, for instance: the caller rolls back.
          record.outcome = 'failed';
          record.error = `${error instanceof Error ? error.name : 'error'} ${sqlStateOf(error) ?? ''}: ${String(error)}`;
          await client.query('ROLLBACK').catch(() => undefined);
        } finally {
          client.release();
        }
      }
    };

    const startedAt = Date.now();
    await Promise.all(Array.from({ length: CALLERS }, (_, n) => caller(n)));
    const stormMs = Date.now() - startedAt;
    await pollUntil(async () => (await delay.count(TOPIC)) === 0, 'every pending action to run', 15_000, 50);
    // A pause in which a late duplicate would show.
    await sleep(800);

    const log = await readLog(server, schema);
    const violations: string[] = [];
    const committedXids = new Map(records.filter((record) => record.xid !== undefined && record.outcome === 'committed').map((record) => [record.xid, record]));
    const uncommittedArmIds = new Set(records.filter((record) => record.outcome !== 'committed').flatMap((record) => record.ops.map((op) => op.armId)).filter((id) => id !== undefined));
    const plannedArmIds = new Set(records.flatMap((record) => record.ops.map((op) => op.armId)).filter((id) => id !== undefined));

    // Nothing of a transaction that did not commit is stored: no log row carries its arming, and every caller row is a committed transaction's.
    for (const row of log) {
      if (row.app === 'caller' && !committedXids.has(row.xid)) violations.push(`log @${row.seq}: written by transaction ${row.xid}, which did not commit`);
      if (row.app !== CONSUMER_APP && row.app !== 'caller' && row.app !== 'producer') violations.push(`log @${row.seq}: written by ${row.app}`);
      if (row.armId !== null && uncommittedArmIds.has(row.armId) && row.app !== CONSUMER_APP) violations.push(`log @${row.seq}: ${row.armId} is from a call or transaction that did not commit`);
    }
    // Each committed call's reply is what its transaction wrote.
    for (const record of committedXids.values()) {
      const mine = log.filter((row) => row.xid === record.xid);
      for (const op of record.ops) {
        const wrote = mine.filter((row) => row.key === op.key);
        if (op.kind === 'replace' || (op.kind === 'keep' && typeof op.result === 'object' && op.result?.armId === op.armId)) {
          const result = op.result as { armId: string; dueAt: number };
          if (result.armId !== op.armId) violations.push(`${record.name}: replace of ${op.key} returned ${JSON.stringify(result)}`);
          if (!wrote.some((row) => row.op !== 'DELETE' && row.armId === op.armId && row.dueAt === result.dueAt)) violations.push(`${record.name}: its ${op.kind} of ${op.key} (${op.armId}) is not in the log`);
        } else if (op.kind === 'cancel' && op.result === true) {
          if (!wrote.some((row) => row.op === 'DELETE')) violations.push(`${record.name}: its cancel of ${op.key} returned true but deleted nothing`);
        } else if (op.kind === 'reschedule' && op.result !== null && typeof op.result === 'object') {
          const result = op.result;
          if (!wrote.some((row) => row.op === 'UPDATE' && row.dueAt === result.dueAt && row.armId === result.armId)) violations.push(`${record.name}: its reschedule of ${op.key} is not in the log`);
        }
      }
    }

    const commitTime = (row: LogRow): number => committedXids.get(row.xid)?.committedAt ?? row.at;
    // Per key, in commit order: the runs against the log.
    let supersededUnrun = 0;
    let cancelledWhileRunning = 0;
    let finals = 0;
    const expectedRuns: string[] = [];
    for (const key of KEYS) {
      const verdict = replayKey(key, log.filter((row) => row.key === key), commitTime);
      violations.push(...verdict.violations);
      supersededUnrun += verdict.supersededUnrun;
      cancelledWhileRunning += verdict.cancelledWhileRunning;
      expectedRuns.push(...verdict.claims.map((arming) => `${key} ${arming.armId}@${arming.dueAt}`));
      const runs = handlers.runs.filter((run) => run.key === key);
      if (verdict.final) {
        finals++;
        const { armId, dueAt } = verdict.final;
        const ofFinal = runs.filter((run) => run.armId === armId && run.dueAt === dueAt);
        if (ofFinal.length !== 1) violations.push(`${key}: its last committed arming ${armId}@${dueAt} ran ${ofFinal.length} times`);
        for (const run of ofFinal) {
          const dueFrom = Math.max(dueAt, commitTime(verdict.final.by));
          if (run.firedAt < dueAt || run.firedAt - dueFrom > LATE_LIMIT_MS) violations.push(`${key}: ${armId}@${dueAt} (committed ${commitTime(verdict.final.by)}) claimed at ${run.firedAt}`);
        }
      }
      for (const run of runs) {
        if (!plannedArmIds.has(run.armId) || uncommittedArmIds.has(run.armId)) violations.push(`${key}: a run of ${run.armId}, which no committed call armed`);
        if (run.attempt !== 1) violations.push(`${key}: ${run.armId} ran as attempt ${run.attempt}`);
      }
    }
    // Every claim the log shows ran once, and nothing else ran: no run twice, none after a cancel or a supersede committed.
    const actualRuns = handlers.runs.map((run) => `${run.key} ${run.armId}@${run.dueAt}`);
    expect(actualRuns.sort()).toEqual(expectedRuns.sort());

    const count = (outcome: TxRecord['outcome'], mode?: TxRecord['mode']): number => records.filter((record) => record.outcome === outcome && (mode === undefined || record.mode === mode)).length;
    const failures = records.filter((record) => record.outcome === 'failed');
    const calls = records.flatMap((record) => record.ops);
    process.stdout.write(
      `  [postgres concurrency] seed ${SEED}: ${records.length} transactions in ${stormMs} ms (${count('committed', 'commit')} committed, ${count('rolled back')} rolled back, ` +
        `${count('committed', 'none')} calls without a transaction, ${failures.length} failed: ${[...new Set(failures.map((record) => record.error?.slice(0, 80)))].join(' | ')}); ` +
        `${calls.length} calls; ${log.length} row changes; ${handlers.runs.length} runs; ${finals} keys armed at the end; ${supersededUnrun} armings superseded or cancelled unrun; ${cancelledWhileRunning} while running\n`,
    );
    expect(violations).toEqual([]);
    // The plan did exercise what it is meant to.
    expect(count('rolled back')).toBeGreaterThan(20);
    expect(count('committed', 'none')).toBeGreaterThan(20);
    expect(finals).toBeGreaterThan(0);
    // Every final arming ran (above); whether earlier ones also ran during the storm depends on how fast the
    // storm goes against their due times (gathered writes made it fast enough that sometimes none do).
    expect(handlers.runs.length).toBeGreaterThanOrEqual(finals);
    expect(supersededUnrun).toBeGreaterThan(20);
    // Every call settled, none timed out, and no transaction failed.
    expect(failures.map((record) => `${record.name}: ${record.error}`)).toEqual([]);
  }, 120_000);

  describe('two transactions on one key', () => {
    const open = new Set<PoolClient>();

    afterEach(async () => {
      // A failed test leaves its transactions open: end them so the pool can close.
      for (const client of open) {
        await client.query('ROLLBACK').catch(() => undefined);
        client.release();
      }
      open.clear();
    });

    /** A caller's transaction on its own pooled client; `end` is left to the test. */
    async function begin(isolation = 'READ COMMITTED'): Promise<PoolClient> {
      const client = await callers.connect();
      open.add(client);
      await client.query(`BEGIN ISOLATION LEVEL ${isolation}`);
      return client;
    }

    async function end(client: PoolClient, how: 'COMMIT' | 'ROLLBACK'): Promise<void> {
      try {
        await client.query(how);
      } finally {
        open.delete(client);
        client.release();
      }
    }

    /** Settles `promise` into its value or its error, with how long it took. */
    async function settle<T>(promise: Promise<T>): Promise<{ value?: T; error?: unknown; ms: number }> {
      const started = performance.now();
      try {
        return { value: await promise, ms: performance.now() - started };
      } catch (error) {
        return { error, ms: performance.now() - started };
      }
    }

    it('the second write waits for the first transaction to commit, then applies on top of it: replace, cancel and reschedule', async () => {
      const schema = `conc_${process.pid}_${++schemas}`;
      const { delay } = await boot(schema);
      const first = await begin();
      await delay.schedule<Payload>(TOPIC, 'held', { delay: 60_000, payload: { armId: 'first' }, transaction: first });
      const second = await begin();
      const replace = settle(delay.schedule<Payload>(TOPIC, 'held', { delay: 30_000, payload: { armId: 'second' }, transaction: second }));
      await sleep(400);
      // Still waiting on the first transaction's row lock.
      expect(await Promise.race([replace.then(() => 'settled'), sleep(10).then(() => 'waiting')])).toBe('waiting');
      await end(first, 'COMMIT');
      const replaced = await replace;
      expect(replaced.error).toBeUndefined();
      expect(replaced.value?.payload).toEqual({ armId: 'second' });
      // A cancel in a third transaction waits for the second, then removes what it committed.
      const third = await begin();
      const cancel = settle(delay.cancel(TOPIC, 'held', { transaction: third }));
      await sleep(300);
      await end(second, 'COMMIT');
      expect((await cancel).value).toBe(true);
      // A reschedule waiting on that cancel finds nothing once the cancel commits.
      const fourth = await begin();
      const moved = settle(delay.reschedule(TOPIC, 'held', { delay: 10_000, transaction: fourth }));
      await sleep(300);
      await end(third, 'COMMIT');
      expect((await moved).value).toBeNull();
      await end(fourth, 'COMMIT');
      expect(await delay.get(TOPIC, 'held')).toBeNull();
    }, 30_000);

    it('a wait longer than commandTimeout rejects with DriverUnavailableError in time; the statement still waits on the caller\'s connection, and after ROLLBACK nothing of that transaction is stored', async () => {
      const schema = `conc_${process.pid}_${++schemas}`;
      const { delay } = await boot(schema, '1s');
      const first = await begin();
      await delay.schedule<Payload>(TOPIC, 'slow', { delay: 60_000, payload: { armId: 'first' }, transaction: first });
      const second = await begin();
      await delay.schedule<Payload>(TOPIC, 'other', { delay: 60_000, payload: { armId: 'second-other' }, transaction: second });
      const timedOut = await settle(delay.schedule<Payload>(TOPIC, 'slow', { delay: 30_000, payload: { armId: 'second' }, transaction: second }));
      expect(timedOut.error).toMatchObject({ code: 'ERR_DELAY_DRIVER_UNAVAILABLE' });
      expect(timedOut.ms).toBeLessThan(1_000 + 1_500);
      // The caller rolls back; its ROLLBACK goes once the waiting statement is done, after the first commits.
      const rollback = end(second, 'ROLLBACK');
      await sleep(200);
      await end(first, 'COMMIT');
      await rollback;
      expect((await delay.get<Payload>(TOPIC, 'slow'))?.payload).toEqual({ armId: 'first' });
      expect(await delay.get(TOPIC, 'other')).toBeNull();
    }, 30_000);

    it("with the caller's own lock_timeout the server ends the wait: the caller gets its client's error (55P03), its transaction is aborted, nothing of it is stored", async () => {
      const schema = `conc_${process.pid}_${++schemas}`;
      const { delay } = await boot(schema);
      await delay.schedule<Payload>(TOPIC, 'locked', { delay: 60_000, payload: { armId: 'initial' } });
      const first = await begin();
      await delay.schedule<Payload>(TOPIC, 'locked', { delay: 60_000, payload: { armId: 'first' }, transaction: first });
      const second = await begin();
      await second.query("SET LOCAL lock_timeout = '300ms'");
      await delay.schedule<Payload>(TOPIC, 'other', { delay: 60_000, payload: { armId: 'second-other' }, transaction: second });
      const refused = await settle(delay.cancel(TOPIC, 'locked', { transaction: second }));
      expect(sqlStateOf(refused.error)).toBe('55P03');
      expect(refused.error).not.toMatchObject({ code: expect.stringMatching(/^ERR_DELAY/) });
      // The transaction is aborted: a further write through it is refused, and it can only roll back.
      await expect(delay.schedule(TOPIC, 'after', { delay: 60_000, transaction: second })).rejects.toMatchObject({ code: 'ERR_DELAY_TRANSACTION_NOT_ACTIVE' });
      await end(second, 'ROLLBACK');
      await end(first, 'COMMIT');
      expect((await delay.get<Payload>(TOPIC, 'locked'))?.payload).toEqual({ armId: 'first' });
      expect(await delay.get(TOPIC, 'other')).toBeNull();
      expect(await delay.get(TOPIC, 'after')).toBeNull();
    }, 30_000);

    it.each(['REPEATABLE READ', 'SERIALIZABLE'])('%s: a write to a key another transaction changed since the snapshot fails with 40001 (the client\'s error); nothing of the transaction is stored; the whole transaction retried succeeds', async (isolation) => {
      const schema = `conc_${process.pid}_${++schemas}`;
      const { delay } = await boot(schema);
      await delay.schedule<Payload>(TOPIC, 'contended', { delay: 60_000, payload: { armId: 'initial' } });
      const placeOrder = async (attempt: number): Promise<void> => {
        const tx = await begin(isolation);
        try {
          await delay.schedule<Payload>(TOPIC, 'own', { delay: 60_000, payload: { armId: `own-${attempt}` }, transaction: tx });
          if (attempt === 1) {
            // Another writer changes the key after this transaction took its snapshot.
            await delay.reschedule(TOPIC, 'contended', { delay: 50_000 });
          }
          await delay.schedule<Payload>(TOPIC, 'contended', { delay: 40_000, payload: { armId: `tx-${attempt}` }, transaction: tx });
          await end(tx, 'COMMIT');
        } catch (error) {
          await end(tx, 'ROLLBACK');
          throw error;
        }
      };
      const failed = await settle(placeOrder(1));
      expect(sqlStateOf(failed.error)).toBe('40001');
      expect(failed.error).not.toMatchObject({ code: expect.stringMatching(/^ERR_DELAY/) });
      // Nothing of the failed transaction: not its other write, not the contended one.
      expect(await delay.get(TOPIC, 'own')).toBeNull();
      const contended = await delay.get<Payload>(TOPIC, 'contended');
      expect(contended?.payload).toEqual({ armId: 'initial' });
      // Retrying the whole transaction (not the one call) succeeds.
      await placeOrder(2);
      expect((await delay.get<Payload>(TOPIC, 'own'))?.payload).toEqual({ armId: 'own-2' });
      expect((await delay.get<Payload>(TOPIC, 'contended'))?.payload).toEqual({ armId: 'tx-2' });
    }, 30_000);

    it('SERIALIZABLE: two overlapping transactions scheduling different keys of one topic: the later commit fails with 40001, and its retry succeeds', async () => {
      const schema = `conc_${process.pid}_${++schemas}`;
      const { delay } = await boot(schema);
      await delay.schedule(TOPIC, 'seed', { delay: 60_000 });
      const a = await begin('SERIALIZABLE');
      const b = await begin('SERIALIZABLE');
      const outcomes: string[] = [];
      const write = async (tx: PoolClient, key: string): Promise<void> => {
        try {
          await delay.schedule(TOPIC, key, { delay: 30_000, transaction: tx });
          outcomes.push(`${key} written`);
        } catch (error) {
          outcomes.push(`${key} write ${sqlStateOf(error)}`);
        }
      };
      await write(a, 'a');
      await write(b, 'b');
      for (const [tx, key] of [[a, 'a'], [b, 'b']] as const) {
        try {
          await end(tx, 'COMMIT');
          outcomes.push(`${key} committed`);
        } catch (error) {
          outcomes.push(`${key} commit ${sqlStateOf(error)}`);
        }
      }
      process.stdout.write(`  [postgres serializable] ${outcomes.join(', ')}\n`);
      // Each write reads the topic's earliest due time (to wake the consumers only when it moves), so under
      // SERIALIZABLE two overlapping transactions on one topic conflict even on different keys: the later to
      // commit fails with 40001, and is retried as a whole, like any serialization failure.
      expect(outcomes).toEqual(['a written', 'b written', 'a committed', 'b commit 40001']);
      expect(await delay.get(TOPIC, 'a')).not.toBeNull();
      expect(await delay.get(TOPIC, 'b')).toBeNull();
      const retry = await begin('SERIALIZABLE');
      await delay.schedule(TOPIC, 'b', { delay: 30_000, transaction: retry });
      await end(retry, 'COMMIT');
      expect(await delay.get(TOPIC, 'b')).not.toBeNull();
    }, 30_000);
  });
});
