import { Logger } from '@nestjs/common';
import { DriverUnavailableError } from '../../errors/driver-unavailable.error';
import { PgPoolClientLike } from '../../interfaces/postgres-pool.interface';
import { isConnectionState, sqlStateOf } from '../../transactions/sql-state';
import { describeError } from '../../utils/describe-error';
import { PostgresHandlerTransactions } from './postgres-handler-transactions';
import { PostgresMemberClient } from './postgres-member-client';

/** One transactional run waiting for, or in, a group. */
export interface GroupedRun {
  /** The run's first statement (begin_run: its arming locked, `found` true while it is there), literals only. */
  readonly opening: string;
  /** The run's last statement (complete_run), literals only: sent with the group's COMMIT. */
  readonly closing: string;
  /** Lock waits of the run's own statements, ms. */
  readonly lockMs: number;
  /** The handler, with its transaction. */
  readonly work: (transaction: unknown) => Promise<void>;
}

interface Waiting extends GroupedRun {
  readonly resolve: (end: 'committed' | 'gone') => void;
  readonly reject: (error: unknown) => void;
}

/** At most this many runs share a transaction (each may hold a subtransaction of its own, and PostgreSQL keeps 64 per backend without spilling). */
export const GROUP_RUNS = 30;
/** A group takes no more runs once it has been open this long: its locks are held until it commits. */
export const GROUP_WINDOW_MS = 50;
/** Lanes opened as soon as runs wait: enough to keep the server and this process both busy on a few cores. */
const BUSY_LANES = 8;
/** Beyond BUSY_LANES, another lane opens while runs wait and every lane's handler has run this long (slow handlers get their own). */
const SLOW_RUN_MS = 20;

/**
 * The transactions of transactional runs on the driver's own connections
 * (no `transactions.run`): runs that come together share one transaction,
 * one after another on one connection, with a savepoint each. Committing
 * one transaction for up to GROUP_RUNS runs instead of one for each is what
 * makes a backlog of transactional runs drain at the rate of plain ones.
 *
 * A group, on its connection (a lane):
 * - `BEGIN` with the arming locks (begin_run) of the runs waiting, in one
 *   message; runs that join later are locked the same way, in a savepoint
 *   of their own, so one that cannot be locked leaves the rest alone;
 * - each run in turn: its handler with a PostgresMemberClient, which takes
 *   a savepoint before the run's first statement (a run that sends none
 *   costs no message). A run that throws (or times out, or had a statement
 *   fail) is rolled back to its savepoint: its writes are gone, the others'
 *   stay, and it fails as a solo run would, once the group has ended (its
 *   row is locked until then);
 * - the completions (complete_run) with `COMMIT`, in one message. Every run
 *   that succeeded resolves 'committed' only then. If the server refuses the
 *   COMMIT (a deferred constraint of one run's writes), nothing committed:
 *   each of those runs goes again in a transaction of its own, so only the
 *   one at fault fails. If the COMMIT does not answer, each run's outcome is
 *   in doubt, resolved from its row as a solo run's is.
 * A lane takes runs until none wait, GROUP_RUNS have run or the group has
 * been open GROUP_WINDOW_MS; then it commits and starts the next group, or
 * gives its connection back. A run that waits LANE_WAIT_MS for a lane opens
 * another (slow handlers get as many connections as before, up to the
 * pool's size; fast ones share a few).
 */
export class PostgresRunGroups {
  private readonly logger = new Logger(PostgresRunGroups.name);
  private readonly waiting: Waiting[] = [];
  /** Each lane's current handler: since when it runs (undefined between handlers). */
  private readonly lanes = new Set<{ handlerSince: number | undefined }>();
  private laneTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly transactions: PostgresHandlerTransactions,
    private readonly maxLanes: () => number,
  ) {}

  run(run: GroupedRun): Promise<'committed' | 'gone'> {
    if (this.closed) return Promise.reject(new DriverUnavailableError('the PostgreSQL driver is closing: no transactional run starts'));
    return new Promise((resolve, reject) => {
      this.waiting.push({ ...run, resolve, reject });
      if (this.lanes.size < BUSY_LANES) this.openLane();
      else this.watchWaits();
    });
  }

  close(): void {
    this.closed = true;
    if (this.laneTimer) clearTimeout(this.laneTimer);
    this.laneTimer = undefined;
    for (const run of this.waiting.splice(0)) run.reject(new DriverUnavailableError('the PostgreSQL driver closed before this transactional run started'));
  }

  /** While runs wait: another lane when every lane's handler has run SLOW_RUN_MS, up to the pool's size. */
  private watchWaits(): void {
    if (this.laneTimer || this.waiting.length === 0) return;
    this.laneTimer = setTimeout(() => {
      this.laneTimer = undefined;
      if (this.waiting.length === 0 || this.closed) return;
      const now = Date.now();
      const slow = [...this.lanes].every((lane) => lane.handlerSince !== undefined && now - lane.handlerSince >= SLOW_RUN_MS);
      if (slow && this.lanes.size < this.maxLanes()) this.openLane();
      this.watchWaits();
    }, SLOW_RUN_MS / 4);
    this.laneTimer.unref();
  }

  private openLane(): void {
    const lane = { handlerSince: undefined };
    this.lanes.add(lane);
    void this.lane(lane)
      .catch((error: unknown) => this.logger.error(`A lane of transactional runs stopped: ${describeError(error)}`))
      .finally(() => {
        this.lanes.delete(lane);
        // Runs that came as the lane gave up its connection.
        if (this.waiting.length > 0 && this.lanes.size === 0 && !this.closed) this.openLane();
      });
  }

  private async lane(lane: { handlerSince: number | undefined }): Promise<void> {
    while (this.waiting.length > 0 && !this.closed) {
      const group = new Group(this.waiting, lane, (run) => this.solo(run));
      let failure: unknown;
      try {
        await this.transactions.withConnection((client, bound) => group.run(client, bound));
      } catch (error) {
        // The connection failed, or a message of the group's went unanswered: nothing of it committed, or (the
        // COMMIT sent) whether it did is for each run's row to say.
        this.logger.debug(`A group of transactional runs failed: ${describeError(error)}`);
        failure = error;
      }
      // No connection: the runs it was for fail, as a solo run's would (and the lane does not spin while the server is away).
      if (!group.began && failure !== undefined) {
        for (const run of this.waiting.splice(0, GROUP_RUNS)) run.reject(failure);
      }
      group.settle(failure);
    }
  }

  /** A run on a transaction of its own (a group could not take it). */
  private solo(run: Waiting): void {
    this.transactions
      .framed(run.opening, async (transaction, opened) => {
        if (opened[0]?.found !== true) return null;
        await run.work(transaction);
        return run.closing;
      })
      .then((committed) => run.resolve(committed ? 'committed' : 'gone'), run.reject);
  }
}

type Bound = <R>(promise: Promise<R>, what: string) => Promise<R>;

/** One group: its runs, what became of each, and the messages that frame them. */
class Group {
  private readonly started = Date.now();
  private count = 0;
  /** Runs were taken from the queue (the group has its connection). */
  began = false;
  private inTransaction = false;
  /** The savepoint of the last run, not yet released. */
  private runSavepoint = false;
  private readonly done: Waiting[] = [];
  private readonly failed: Array<{ run: Waiting; error: unknown }> = [];
  private readonly gone: Waiting[] = [];
  /** Taken, and not yet run, when the group failed. */
  private current: Waiting | undefined;
  private ended: { committed: boolean; error?: unknown; refused?: boolean } | undefined;

  constructor(
    private readonly waiting: Waiting[],
    private readonly lane: { handlerSince: number | undefined },
    private readonly solo: (run: Waiting) => void,
  ) {}

  async run(client: PgPoolClientLike, bound: Bound): Promise<void> {
    this.began = true;
    while (this.waiting.length > 0 && this.count < GROUP_RUNS && (this.count === 0 || Date.now() - this.started < GROUP_WINDOW_MS)) {
      const run = this.waiting.shift() as Waiting;
      this.count++;
      this.current = run;
      await this.runOne(client, bound, run);
      this.current = undefined;
    }
    await this.end(client, bound);
  }

  private async runOne(client: PgPoolClientLike, bound: Bound, run: Waiting): Promise<void> {
    // The first run of the transaction needs no savepoint: if it fails, the whole transaction goes.
    const savepoint = this.inTransaction;
    const opening = savepoint ? `${this.releaseRun()}SAVEPOINT run;${run.opening}` : `BEGIN;${run.opening}`;
    let found: boolean;
    try {
      found = lastFound(await bound(client.query(opening), savepoint ? "a transactional run's savepoint and the lock of its arming" : "BEGIN and the lock of a run's arming"));
      this.inTransaction = true;
      this.runSavepoint = savepoint;
    } catch (error) {
      if (!refusedByServer(error)) throw error;
      // Its lock wait ran out, or the like: it fails as it would alone.
      await this.undo(client, bound, savepoint || this.inTransaction);
      this.failed.push({ run, error });
      return;
    }
    if (!found) {
      this.gone.push(run);
      return;
    }
    const member = new PostgresMemberClient(client);
    let error: unknown;
    let threw = false;
    this.lane.handlerSince = Date.now();
    try {
      await run.work(member.client);
    } catch (thrown) {
      error = thrown;
      threw = true;
    } finally {
      member.close();
      this.lane.handlerSince = undefined;
    }
    if (!threw && member.failure !== undefined) {
      // The handler caught a failed statement: its part of the transaction is aborted, and it is not done.
      error = member.failure;
      threw = true;
    }
    if (!threw && !member.clean) {
      // Statements sent in ways not seen here, or unanswered yet: whether they all went through, the server says.
      try {
        await bound(client.query(savepoint ? 'RELEASE SAVEPOINT run' : 'SELECT 1'), "a check of a transactional run's statements");
        this.runSavepoint = false;
      } catch (checked) {
        if (!refusedByServer(checked)) throw checked;
        error = checked;
        threw = true;
      }
    }
    if (!threw) {
      this.done.push(run);
      return;
    }
    // Queued behind whatever the handler still had in flight: that lands in its own part, and goes with it.
    await this.undo(client, bound, savepoint);
    this.failed.push({ run, error });
  }

  /** Rolls back the last run: to its savepoint, or (it had none: it was the first) the whole transaction. */
  private async undo(client: PgPoolClientLike, bound: Bound, savepoint: boolean): Promise<void> {
    await bound(client.query(savepoint ? 'ROLLBACK TO SAVEPOINT run;RELEASE SAVEPOINT run' : 'ROLLBACK'), "a rollback of a transactional run's writes");
    this.runSavepoint = false;
    if (!savepoint) this.inTransaction = false;
  }

  private async end(client: PgPoolClientLike, bound: Bound): Promise<void> {
    if (!this.inTransaction) return;
    if (this.done.length === 0) {
      await bound(client.query('ROLLBACK'), 'ROLLBACK');
      this.ended = { committed: false };
      return;
    }
    const closings = this.done.map((run) => run.closing).join(';');
    try {
      await bound(client.query(`${this.releaseRun()}${closings};COMMIT`), 'the completions of transactional runs and COMMIT');
      this.ended = { committed: true };
    } catch (error) {
      this.ended = { committed: false, error, refused: refusedByServer(error) };
      if (!this.ended.refused) throw error;
      // Refused: by the COMMIT (the transaction is over) or by a statement before it (the transaction is aborted).
      await bound(client.query('ROLLBACK'), 'ROLLBACK');
    }
  }

  /** `RELEASE SAVEPOINT run;` when the last run still has its savepoint. */
  private releaseRun(): string {
    if (!this.runSavepoint) return '';
    this.runSavepoint = false;
    return 'RELEASE SAVEPOINT run;';
  }

  /** What became of each run, told once the transaction is over (a run's row stays locked until then). */
  settle(failure: unknown): void {
    for (const run of this.gone) run.resolve('gone');
    for (const { run, error } of this.failed) run.reject(error);
    const ended = this.ended;
    if (ended?.committed === true) {
      for (const run of this.done) run.resolve('committed');
      return;
    }
    if (ended?.refused === true && this.done.length > 1) {
      // Nothing committed; which run the server refused is not known: each goes again on its own.
      for (const run of this.done) this.solo(run);
      return;
    }
    // The server refused the COMMIT of one run's work, or the group failed part way (its connection, an unanswered
    // message): nothing committed, or the COMMIT's fate is unknown. Either way each run's row says which.
    const error = ended?.error ?? failure ?? new DriverUnavailableError('a group of transactional runs ended before its COMMIT');
    for (const run of this.done) run.reject(error);
    this.current?.reject(error);
  }
}

/** The `found` column of begin_run, the last statement of a message (pg resolves a list of results for several). */
function lastFound(results: unknown): boolean {
  const last: unknown = Array.isArray(results) ? results[results.length - 1] : results;
  const rows = typeof last === 'object' && last !== null ? (last as { rows?: unknown }).rows : undefined;
  return Array.isArray(rows) && typeof rows[0] === 'object' && rows[0] !== null && (rows[0] as { found?: unknown }).found === true;
}

/** An error with a SQLSTATE the server sent about a statement (not the connection's): the connection is still good. */
function refusedByServer(error: unknown): boolean {
  const state = sqlStateOf(error);
  return state !== undefined && !isConnectionState(state);
}
