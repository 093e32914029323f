import { DriverUnavailableError } from '../../errors/driver-unavailable.error';
import { ScheduleCommand, ScheduleResult } from '../../interfaces/delay-driver.interface';
import { WriteOrder, writeId } from './postgres-write-order';

/** One entry of the schedule function's arrays. */
export type ScheduleEntry = Omit<ScheduleCommand, 'topic' | 'maxPastMs' | 'transaction'>;

/**
 * Sends entries of one topic as one statement of the schedule function, on
 * the driver's pool, not ordered (the gatherer holds the keys' write order):
 * the results in entry order, or the error a single call would get (the
 * function is all or nothing, so a refused entry fails the statement).
 */
export type ScheduleSender = (topic: string, entries: readonly ScheduleEntry[], maxPastMs: number) => Promise<ScheduleResult[]>;

/** At most this many gathered schedules go in one statement. */
const MAX_GATHERED = 500;

/** A schedule call waiting for the end of its tick. */
interface PendingSchedule {
  readonly command: ScheduleCommand;
  settled: boolean;
  resolve(result: ScheduleResult): void;
  reject(error: unknown): void;
}

/** The schedule calls of one tick for one topic. */
interface PendingGroup {
  readonly topic: string;
  readonly maxPastMs: number;
  readonly calls: PendingSchedule[];
  readonly keys: Set<string>;
}

/**
 * Gathers the autocommit `schedule` calls made in the same tick for the same
 * topic into one statement of the schedule function, which applies its
 * entries in order (a key given twice sees its first arming): one commit,
 * one WAL flush, one round trip for all of them, where each call alone
 * would wait for its own commit. A call alone in its tick is the statement
 * with one entry, as before. Calls in the application's transaction never
 * come here.
 *
 * Semantics are those of the single calls, in the order made:
 * - the statement holds every key's place in the driver's write order from
 *   when it is sent; any other write or read of one of the gathered keys
 *   first sends the group (`flushFor`), so it reaches the database after it;
 * - the function is all or nothing: when it refuses an entry (a due time out
 *   of range, a key with an open batch) it wrote nothing, and the calls are
 *   sent again one by one, in order, still holding their keys' place, so
 *   each caller gets its own result or its own error;
 * - a failure of the statement itself (timeout, lost connection) fails each
 *   call with that DriverUnavailableError, as each would have alone;
 * - every call settles within the command timeout from when its group is
 *   sent, even when it had to be sent again.
 */
export class PostgresScheduleGatherer {
  private pending = new Map<string, PendingGroup>();
  private flushQueued = false;

  constructor(
    private readonly order: WriteOrder,
    private readonly send: ScheduleSender,
    private readonly commandTimeoutMs: number,
  ) {}

  schedule(command: ScheduleCommand): Promise<ScheduleResult> {
    return new Promise<ScheduleResult>((resolve, reject) => {
      let group = this.pending.get(command.topic);
      if (group !== undefined && group.maxPastMs !== command.maxPastMs) {
        // A call under another maxPast cannot share the statement: what was gathered goes first.
        this.sendGroup(group);
        group = undefined;
      }
      if (group === undefined) {
        group = { topic: command.topic, maxPastMs: command.maxPastMs, calls: [], keys: new Set() };
        this.pending.set(command.topic, group);
      }
      group.calls.push({ command, settled: false, resolve, reject });
      group.keys.add(command.key);
      if (group.calls.length >= MAX_GATHERED) {
        this.sendGroup(group);
      } else if (!this.flushQueued) {
        this.flushQueued = true;
        process.nextTick(this.flushAtTickEnd);
      }
    });
  }

  /** Sends the topic's gathered calls now if one of them is for one of these keys: a write or read of those keys made later must follow them. */
  flushFor(topic: string, keys: readonly string[]): void {
    const group = this.pending.get(topic);
    if (group !== undefined && keys.some((key) => group.keys.has(key))) this.sendGroup(group);
  }

  private readonly flushAtTickEnd = (): void => {
    this.flushQueued = false;
    if (this.pending.size === 0) return;
    const groups = [...this.pending.values()];
    for (const group of groups) this.sendGroup(group);
  };

  private sendGroup(group: PendingGroup): void {
    this.pending.delete(group.topic);
    const { calls } = group;
    const deadline = setTimeout(() => {
      const error = new DriverUnavailableError(`PostgreSQL did not answer within ${this.commandTimeoutMs} ms`);
      for (const call of calls) settle(call, error);
    }, this.commandTimeoutMs);
    const keys = [...group.keys];
    void this.order
      .run(
        keys.map((key) => writeId(group.topic, key)),
        () => this.apply(group),
      )
      .finally(() => clearTimeout(deadline));
  }

  /** Runs the group while it holds its keys' place in the write order; never rejects (each call is settled). */
  private async apply(group: PendingGroup): Promise<void> {
    const { topic, maxPastMs, calls } = group;
    try {
      const results = await this.send(
        topic,
        calls.map((call) => call.command),
        maxPastMs,
      );
      calls.forEach((call, n) => settle(call, undefined, results[n]));
      return;
    } catch (error) {
      // A failure of the statement itself: each call alone would have got it too. So does a lone call's refusal.
      if (calls.length === 1 || error instanceof DriverUnavailableError) {
        for (const call of calls) settle(call, error);
        return;
      }
    }
    // Refused as a whole, so nothing was written: one by one, each key's calls in the order made, keys side by side.
    const chains = new Map<string, Promise<void>>();
    for (const call of calls) {
      if (call.settled) continue;
      const before = chains.get(call.command.key) ?? Promise.resolve();
      chains.set(
        call.command.key,
        before.then(() =>
          this.send(topic, [call.command], maxPastMs).then(
            ([result]) => settle(call, undefined, result),
            (error: unknown) => settle(call, error),
          ),
        ),
      );
    }
    await Promise.all(chains.values());
  }
}

function settle(call: PendingSchedule, error: unknown, result?: ScheduleResult): void {
  if (call.settled) return;
  call.settled = true;
  if (result !== undefined) call.resolve(result);
  else call.reject(error);
}
