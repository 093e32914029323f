import { Logger } from '@nestjs/common';
import { DriverUnavailableError } from '../../errors/driver-unavailable.error';
import { PgPoolClientLike } from '../../interfaces/postgres-pool.interface';
import { refusedByServer } from '../../transactions/sql-state';
import { describeError } from '../../utils/describe-error';
import { markNotCommitted } from '../../utils/not-committed';
import { PostgresHandlerTransactions } from './postgres-handler-transactions';
import { PostgresMemberClient } from './postgres-member-client';

/** One transactional run waiting for, or in, a group. */
export interface GroupedRun {
  /** The run's first statement (begin_run: its arming locked, `found` true while it is there), literals only. */
  readonly opening: string;
  /** The run's last statement (complete_run), literals only: sent with the group's COMMIT. */
  readonly closing: string;
  /** Where the run's completion goes among the group's (topic and row): completions lock rows in this order in every group, so two groups never wait for each other's. */
  readonly order: string;
  /** The handler, with its transaction. */
  readonly work: (transaction: unknown) => Promise<void>;
}

interface Waiting extends GroupedRun {
  readonly queuedAt: number;
  readonly resolve: (end: 'committed' | 'gone') => void;
  readonly reject: (error: unknown) => void;
}

/** At most this many runs share a transaction (each may hold a subtransaction of its own, and PostgreSQL keeps 64 per backend without spilling). */
export const GROUP_RUNS = 30;
/** A group takes no more runs once it has been open this long (its locks are held until it commits)... */
export const GROUP_WINDOW_MS = 50;
/** ...unless it has fewer than this many, and more wait: on a busy machine one run can take the whole window. */
const GROUP_MIN_RUNS = 4;
/** Lanes opened as soon as runs wait: enough to keep the server and this process both busy on a few cores. */
const BUSY_LANES = 8;
/** Beyond BUSY_LANES, another lane opens while runs wait and every lane's handler has run this long (slow handlers get their own)... */
const SLOW_RUN_MS = 20;
/** ...or a run has waited this long for one (a busy machine: the wait counts against the run's timeout). */
const LONGEST_WAIT_MS = 250;
/** The savepoint of each run: a name of the driver's own, which no handler would use for its own savepoints. */
export const RUN_SAVEPOINT = 'nestjs_delay_run';

/**
 * The transactions of transactional runs on the driver's own connections
 * (no `transactions.run`): runs that come together share one transaction,
 * one after another on one connection (a lane), each in a savepoint of its
 * own, and one COMMIT for all. One commit for up to GROUP_RUNS runs instead
 * of one each, and one message per run instead of two.
 *
 * A group's messages: the first run's `BEGIN` with its begin_run (the lock
 * of its arming); each later run's `RELEASE SAVEPOINT` of the one before,
 * its `SAVEPOINT` and its begin_run, in one message; at the end, every
 * completed run's complete_run and `COMMIT`, in one message. A run that
 * throws, times out, or leaves its part of the transaction aborted (a
 * failed statement its handler caught and did not roll back itself) is
 * rolled back to its savepoint (the first run, which has none, with the
 * transaction) and fails at once, as alone; the others stay. A completed
 * run resolves 'committed' only once the COMMIT answered. If the server
 * refuses the COMMIT (a deferred constraint of one run's writes, a
 * deadlock), nothing committed: each of the runs goes again in a
 * transaction of its own, so only the one at fault fails. If the COMMIT does
 * not answer, each run's outcome is in doubt, decided by its row as a solo
 * run's is. A lane takes runs until none wait, GROUP_RUNS have run, or the
 * group has been open GROUP_WINDOW_MS (and has GROUP_MIN_RUNS); then it commits and starts another
 * group or gives its connection back. BUSY_LANES lanes open as soon as runs
 * wait; another only while every lane's handler has run SLOW_RUN_MS, or a
 * run has waited LONGEST_WAIT_MS (slow handlers, or a busy machine, get
 * connections of their own, up to the pool's size: as many as runs).
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
      this.waiting.push({ ...run, queuedAt: Date.now(), resolve, reject });
      if (this.lanes.size < Math.min(BUSY_LANES, this.maxLanes())) this.openLane();
      else this.watchWaits();
    });
  }

  close(): void {
    this.closed = true;
    if (this.laneTimer) clearTimeout(this.laneTimer);
    this.laneTimer = undefined;
    for (const run of this.waiting.splice(0)) run.reject(new DriverUnavailableError('the PostgreSQL driver closed before this transactional run started'));
  }

  /** While runs wait: another lane when every lane's handler has run SLOW_RUN_MS or a run waited LONGEST_WAIT_MS, up to the pool's size. */
  private watchWaits(): void {
    if (this.laneTimer || this.waiting.length === 0) return;
    this.laneTimer = setTimeout(() => {
      this.laneTimer = undefined;
      if (this.waiting.length === 0 || this.closed) return;
      const now = Date.now();
      const slow = [...this.lanes].every((lane) => lane.handlerSince !== undefined && now - lane.handlerSince >= SLOW_RUN_MS);
      if ((slow || now - this.waiting[0].queuedAt >= LONGEST_WAIT_MS) && this.lanes.size < this.maxLanes()) this.openLane();
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
      group.settle(failure);
      if (!group.began && failure !== undefined) {
        // No connection: unless another lane is at work, the runs it was for fail, as a solo run's would (and the
        // lane does not spin while the server is away).
        if (this.lanes.size === 1) for (const run of this.waiting.splice(0, GROUP_RUNS)) run.reject(markNotCommitted(failure));
        return;
      }
    }
  }

  /** A run on a transaction of its own (a group could not commit it). */
  private solo(run: Waiting): void {
    if (this.closed) {
      run.reject(markNotCommitted(new DriverUnavailableError('the PostgreSQL driver closed before this transactional run could go again')));
      return;
    }
    let handled = false;
    this.transactions
      .framed(run.opening, async (transaction, opened) => {
        if (opened[0]?.found !== true) return null;
        const member = new PostgresMemberClient(transaction as PgPoolClientLike);
        try {
          await run.work(member.client);
        } finally {
          member.close();
        }
        handled = true;
        return run.closing;
      })
      .then(
        (committed) => run.resolve(committed ? 'committed' : 'gone'),
        // Before the closing message, or refused by the server: nothing committed. Else the COMMIT is in doubt.
        (error: unknown) => run.reject(!handled || refusedByServer(error) ? markNotCommitted(error) : error),
      );
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
  /** The run being framed or run when the group failed. */
  private current: Waiting | undefined;
  private ended: { committed: boolean; error?: unknown; refused?: boolean } | undefined;

  constructor(
    private readonly waiting: Waiting[],
    private readonly lane: { handlerSince: number | undefined },
    private readonly solo: (run: Waiting) => void,
  ) {}

  async run(client: PgPoolClientLike, bound: Bound): Promise<void> {
    this.began = true;
    while (this.waiting.length > 0 && this.count < GROUP_RUNS && (this.count < GROUP_MIN_RUNS || Date.now() - this.started < GROUP_WINDOW_MS)) {
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
    const opening = savepoint ? `${this.releaseRun()}SAVEPOINT ${RUN_SAVEPOINT};${run.opening}` : `BEGIN;${run.opening}`;
    let found: boolean;
    try {
      found = lastFound(await bound(client.query(opening), savepoint ? "a transactional run's savepoint and the lock of its arming" : "BEGIN and the lock of a run's arming"));
      this.inTransaction = true;
      this.runSavepoint = savepoint;
    } catch (error) {
      if (!refusedByServer(error)) throw error;
      // Its lock wait ran out, or the like: it fails as it would alone.
      await this.undo(client, bound, savepoint);
      run.reject(error);
      return;
    }
    if (!found) {
      run.resolve('gone');
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
    if (!threw && !member.clean) {
      // A statement failed (its handler may have rolled it back to a savepoint of its own), or was sent in a way not
      // seen here, or has not answered yet: whether the run's part of the transaction is sound, the server says.
      try {
        await bound(client.query(savepoint ? `RELEASE SAVEPOINT ${RUN_SAVEPOINT}` : 'SELECT 1'), "a check of a transactional run's statements");
        this.runSavepoint = false;
      } catch (checked) {
        if (!refusedByServer(checked)) throw checked;
        error = markNotCommitted(member.failure ?? checked);
        threw = true;
      }
    }
    if (!threw) {
      this.done.push(run);
      return;
    }
    // Queued behind whatever the handler still had in flight: that lands in its own part, and goes with it. The
    // rollback also frees the run's row (its lock was taken in its savepoint), so it fails at once.
    await this.undo(client, bound, savepoint);
    run.reject(error);
  }

  /** Rolls back the last run: to its savepoint, or (it had none: it was the first) the whole transaction. */
  private async undo(client: PgPoolClientLike, bound: Bound, savepoint: boolean): Promise<void> {
    await bound(client.query(savepoint ? `ROLLBACK TO SAVEPOINT ${RUN_SAVEPOINT};RELEASE SAVEPOINT ${RUN_SAVEPOINT}` : 'ROLLBACK'), "a rollback of a transactional run's writes");
    this.runSavepoint = false;
    if (!savepoint) this.inTransaction = false;
  }

  private async end(client: PgPoolClientLike, bound: Bound): Promise<void> {
    if (!this.inTransaction) return;
    if (this.done.length === 0) {
      await bound(client.query('ROLLBACK'), 'ROLLBACK');
      this.inTransaction = false;
      return;
    }
    const closings = [...this.done]
      .sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : 0))
      .map((run) => run.closing)
      .join(';');
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

  /** `RELEASE SAVEPOINT ...;` when the last run still has its savepoint. */
  private releaseRun(): string {
    if (!this.runSavepoint) return '';
    this.runSavepoint = false;
    return `RELEASE SAVEPOINT ${RUN_SAVEPOINT};`;
  }

  /** The completed runs' outcome, told once the transaction is over. */
  settle(failure: unknown): void {
    const ended = this.ended;
    if (ended?.committed === true) {
      for (const run of this.done) run.resolve('committed');
      return;
    }
    if (ended?.refused === true) {
      // Nothing committed. Alone, the run is the one at fault; else which one is not known: each goes again alone.
      if (this.done.length === 1) this.done[0].reject(markNotCommitted(ended.error));
      else for (const run of this.done) this.solo(run);
      return;
    }
    if (ended !== undefined) {
      // The COMMIT was sent and did not answer: whether it happened, each run's row says.
      for (const run of this.done) run.reject(ended.error);
      return;
    }
    // The group failed before its COMMIT (its connection, an unanswered message): nothing of it committed.
    const error = markNotCommitted(new DriverUnavailableError(`a shared transaction of transactional runs ended before its COMMIT (${describeError(failure ?? 'no reason given')}): nothing of it committed`));
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
