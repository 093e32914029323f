import { DriverUnavailableError } from '../../errors/driver-unavailable.error';
import { AdvanceSeriesCommand, ScheduleCommand, ScheduleResult } from '../../interfaces/delay-driver.interface';
import { Row } from './postgres-connection';
import { WriteOrder, writeId } from './postgres-write-order';

/** One entry of the schedule function's arrays. */
export type ScheduleEntry = Omit<ScheduleCommand, 'topic' | 'maxPastMs' | 'transaction'>;

/**
 * How gathered calls reach the database, on the driver's pool and outside
 * its write order (the gatherer holds the keys' places itself): results in
 * call order, or the error the statement got.
 */
export interface GatheredStatements {
  /** One statement of the schedule function: all or nothing, so a refused entry fails it with that entry's typed error. */
  schedule(topic: string, entries: readonly ScheduleEntry[], maxPastMs: number, timeoutMs: number): Promise<ScheduleResult[]>;
  /** One statement deleting the keys' actions: per key, whether it removed one (a key given twice: the first call did). */
  cancel(topic: string, keys: readonly string[], timeoutMs: number): Promise<boolean[]>;
  /** One statement of recurring steps (advance_series_steps): per command, in order, its advance_series row. */
  advance(topic: string, commands: readonly AdvanceSeriesCommand[], timeoutMs: number): Promise<Row[]>;
}

/** At most this many gathered calls go in one statement. */
const MAX_GATHERED = 500;
/** The tag of recurring steps' groups. */
const ADVANCE = 'advance';

/** A call waiting for the end of its tick, with what its statement needs. */
interface PendingCall<C, R> {
  readonly key: string;
  readonly input: C;
  settled: boolean;
  resolve(result: R): void;
  reject(error: unknown): void;
}

/** The calls of one kind gathered for one topic in one tick, and how to send any run of them. */
interface PendingGroup<C, R> {
  readonly topic: string;
  /** Calls share a group only under the same tag: the kind, and for schedule its maxPast. */
  readonly tag: string;
  readonly calls: Array<PendingCall<C, R>>;
  readonly keys: Set<string>;
  /** Sends inputs within `timeoutMs` (what is left of the group's bound). */
  send(inputs: readonly C[], timeoutMs: number): Promise<R[]>;
}

/**
 * Gathers the autocommit `schedule` calls, the `cancel` calls and the
 * recurring steps (advanceSeries: the ticks one claim took, run in the same
 * tick) made in the same tick for the same topic into one statement each:
 * one commit, one WAL flush and one round trip for all of them, where each
 * call alone would wait for its own commit. A call alone in its tick is a statement of its
 * own, as before. Calls in the application's transaction never come here.
 *
 * Semantics are those of the single calls, in the order made:
 * - a topic has one group at a time: a call of another kind (or another
 *   maxPast) sends the group gathered so far first;
 * - a sent group holds every key's place in the driver's write order; any
 *   other write or read of one of the gathered keys first sends the group
 *   (`flushFor`), so it reaches the database after it;
 * - a statement the server refuses (the schedule function is all or nothing:
 *   a due time out of range, a key with an open batch) wrote nothing; its
 *   calls are sent again one by one, each key's in order, still holding
 *   their keys' place, so each caller gets its own result or its own error;
 * - a failure of the statement itself (timeout, lost connection) fails each
 *   call with that DriverUnavailableError, as each would have alone;
 * - every call settles within the command timeout from when its group is
 *   sent, even when it had to be sent again: waiting for its keys' place
 *   counts, a statement gets what is left of that time (the server's limits
 *   too, see PostgresConnection), and a group whose time ran out while it
 *   waited is not sent at all.
 */
export class PostgresWriteGatherer {
  private readonly pending = new Map<string, PendingGroup<unknown, unknown>>();
  private flushQueued = false;
  /**
   * Topics with a statement of recurring steps on its way. The steps made
   * meanwhile wait for it to return and then go together (unless a write of
   * one of their keys sends them first): a topic has at most one such
   * statement at a time, whose commit then carries as many steps as came
   * during the last one, instead of many small commits queueing behind each
   * other (each notifying commit waits for the one before it).
   */
  private readonly stepping = new Set<string>();

  constructor(
    private readonly order: WriteOrder,
    private readonly statements: GatheredStatements,
    private readonly commandTimeoutMs: number,
  ) {}

  schedule(command: ScheduleCommand): Promise<ScheduleResult> {
    const { topic, maxPastMs } = command;
    return this.gather(topic, `schedule ${maxPastMs}`, command.key, command, (entries: readonly ScheduleEntry[], timeoutMs) =>
      this.statements.schedule(topic, entries, maxPastMs, timeoutMs),
    );
  }

  cancel(topic: string, key: string): Promise<boolean> {
    return this.gather(topic, 'cancel', key, key, (keys: readonly string[], timeoutMs) => this.statements.cancel(topic, keys, timeoutMs));
  }

  /** A recurring step outside any transaction: its advance_series row. */
  advance(command: AdvanceSeriesCommand): Promise<Row> {
    const { topic } = command;
    return this.gather(topic, ADVANCE, command.key, command, (commands: readonly AdvanceSeriesCommand[], timeoutMs) => this.statements.advance(topic, commands, timeoutMs));
  }

  /** Sends the topic's gathered calls now if one of them is for one of these keys: a write or read of those keys made later must follow them. */
  flushFor(topic: string, keys: readonly string[]): void {
    const group = this.pending.get(topic);
    if (group !== undefined && keys.some((key) => group.keys.has(key))) this.sendGroup(group);
  }

  /**
   * Adds a call to the topic's group of this tag (a group of another tag is
   * sent first). Calls of one tag send alike: the group keeps the first
   * call's `send`.
   */
  private gather<C, R>(topic: string, tag: string, key: string, input: C, send: (inputs: readonly C[], timeoutMs: number) => Promise<R[]>): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      let group = this.pending.get(topic) as PendingGroup<C, R> | undefined;
      if (group !== undefined && group.tag !== tag) {
        this.sendGroup(group);
        group = undefined;
      }
      if (group === undefined) {
        group = { topic, tag, calls: [], keys: new Set(), send };
        this.pending.set(topic, group as PendingGroup<unknown, unknown>);
      }
      const call: PendingCall<C, R> = { key, input, settled: false, resolve, reject };
      group.calls.push(call);
      group.keys.add(key);
      if (group.calls.length >= MAX_GATHERED) {
        this.sendGroup(group);
      } else if (!this.flushQueued) {
        this.flushQueued = true;
        process.nextTick(this.flushAtTickEnd);
      }
    });
  }

  private readonly flushAtTickEnd = (): void => {
    this.flushQueued = false;
    if (this.pending.size === 0) return;
    for (const group of [...this.pending.values()]) if (group.tag !== ADVANCE || !this.stepping.has(group.topic)) this.sendGroup(group);
  };

  private sendGroup<C, R>(group: PendingGroup<C, R>): void {
    const { topic } = group;
    this.pending.delete(topic);
    const { calls } = group;
    const steps = group.tag === ADVANCE;
    if (steps) this.stepping.add(topic);
    const endsAt = Date.now() + this.commandTimeoutMs;
    const deadline = setTimeout(() => {
      const error = this.timedOut();
      for (const call of calls) settle(call, { error });
    }, this.commandTimeoutMs);
    void this.order
      .run(
        [...group.keys].map((key) => writeId(topic, key)),
        () => this.apply(group, endsAt),
      )
      .finally(() => {
        clearTimeout(deadline);
        if (!steps) return;
        this.stepping.delete(topic);
        // The steps that came meanwhile, if they have not gone yet.
        const waiting = this.pending.get(topic);
        if (waiting?.tag === ADVANCE) this.sendGroup(waiting);
      });
  }

  private timedOut(): DriverUnavailableError {
    return new DriverUnavailableError(`PostgreSQL did not answer within ${this.commandTimeoutMs} ms`);
  }

  /**
   * Runs the group while it holds its keys' place in the write order, each statement within what is left of the
   * group's bound (it ends at `endsAt`); never rejects (each call is settled). Nothing is sent once that time is out
   * (or the deadline timer, a moment early, settled every call): a call told "unavailable" is not applied after all.
   */
  private async apply<C, R>(group: PendingGroup<C, R>, endsAt: number): Promise<void> {
    const { calls } = group;
    const timeoutMs = endsAt - Date.now();
    if (timeoutMs <= 0 || calls.every((call) => call.settled)) {
      for (const call of calls) settle(call, { error: this.timedOut() });
      return;
    }
    try {
      const results = await group.send(
        calls.map((call) => call.input),
        timeoutMs,
      );
      calls.forEach((call, n) => settle(call, { result: results[n] }));
      return;
    } catch (error) {
      // A failure of the statement itself: each call alone would have got it too. So does a lone call's refusal.
      if (calls.length === 1 || error instanceof DriverUnavailableError) {
        for (const call of calls) settle(call, { error });
        return;
      }
    }
    // Refused as a whole, so nothing was written: one by one, each key's calls in the order made, keys side by side.
    const chains = new Map<string, Promise<void>>();
    for (const call of calls) {
      if (call.settled) continue;
      const before = chains.get(call.key) ?? Promise.resolve();
      chains.set(
        call.key,
        before.then(() => {
          const timeoutMs = endsAt - Date.now();
          if (timeoutMs <= 0) return settle(call, { error: this.timedOut() });
          return group.send([call.input], timeoutMs).then(
            ([result]) => settle(call, { result }),
            (error: unknown) => settle(call, { error }),
          );
        }),
      );
    }
    await Promise.all(chains.values());
  }
}

function settle<C, R>(call: PendingCall<C, R>, outcome: { result: R } | { error: unknown }): void {
  if (call.settled) return;
  call.settled = true;
  if ('result' in outcome) call.resolve(outcome.result);
  else call.reject(outcome.error);
}
