import { ActionKindConflictError } from '../../errors/action-kind-conflict.error';
import { DueTimeOutOfRangeError } from '../../errors/due-time-out-of-range.error';
import { DueSpec, ScheduleCommand, ScheduleManyCommand, ScheduleResult, StoredAction } from '../../interfaces/delay-driver.interface';
import { RedisConnection } from './redis-connection';
import { storableTrace, toStoredAction } from './redis-envelope';
import { TopicKeys } from './redis-keys';

type Reply = Array<string | number>;

/** At most this many gathered schedules go in one script call: one call blocks Redis while it runs. */
const MAX_GATHERED = 500;

/** A schedule call waiting for the end of its tick. */
interface PendingSchedule {
  readonly command: ScheduleCommand;
  resolve(result: ScheduleResult): void;
  reject(error: unknown): void;
}

/** The schedule calls of one tick for one shard. */
interface PendingGroup {
  readonly keys: TopicKeys;
  readonly maxPastMs: number;
  readonly calls: PendingSchedule[];
}

/**
 * Arms actions in one shard of a topic. `schedule` calls made in the same
 * tick for the same shard are gathered into one schedule-many call in 'each'
 * mode: each keeps its own outcome, its own refusal and its own trace, as
 * if sent alone and in the order made, but Redis runs one script and the
 * client sends one command for all of them (with 100 calls in flight, a
 * separate command per call cost Redis and the client each about twice as
 * much per call). A call alone in its tick goes through schedule.lua.
 *
 * Every other command of the connection first sends what was gathered
 * (RedisConnection.beforeSend), so a cancel or a read issued after a
 * schedule still reaches Redis after it. A gathered call fails as a whole
 * (time bound, lost connection): each of its callers gets that error, as
 * each would have alone.
 */
export class RedisScheduler {
  private pending = new Map<TopicKeys, PendingGroup>();
  private flushQueued = false;

  constructor(
    private readonly connection: RedisConnection,
    private readonly horizonMs: number,
    private readonly clockSkew: { value: number },
  ) {
    connection.beforeSend(this.flush);
  }

  schedule(keys: TopicKeys, command: ScheduleCommand): Promise<ScheduleResult> {
    // Series steps gathered before this call leave before it.
    this.connection.sendGatheredBefore(this.flush);
    return new Promise<ScheduleResult>((resolve, reject) => {
      let group = this.pending.get(keys);
      if (group !== undefined && group.maxPastMs !== command.maxPastMs) {
        // A call under another maxPast cannot share the script call: what was gathered goes first.
        this.pending.delete(keys);
        this.send(group);
        group = undefined;
      }
      if (group === undefined) {
        group = { keys, maxPastMs: command.maxPastMs, calls: [] };
        this.pending.set(keys, group);
      }
      group.calls.push({ command, resolve, reject });
      if (group.calls.length >= MAX_GATHERED) {
        this.pending.delete(keys);
        this.send(group);
      } else if (!this.flushQueued) {
        this.flushQueued = true;
        process.nextTick(this.flushAtTickEnd);
      }
    });
  }

  /** One atomic call for entries of one shard ('check' writes nothing and only refuses). */
  async scheduleMany(keys: TopicKeys, command: ScheduleManyCommand, entries: ScheduleManyCommand['entries'], mode: 'write' | 'check'): Promise<ScheduleResult[]> {
    // One call is one request: the first entry's trace context stands for all of them.
    const args: Array<string | number> = [command.maxPastMs, this.horizonMs, keys.wake, storableTrace(command.entries[0]?.trace), mode];
    for (const entry of entries) args.push(entry.key, ...dueArgs(entry.due), entry.payload ?? '', entry.ifExists);
    const reply = await this.connection.write<Reply>('scheduleMany', [keys.due, keys.env, keys.active, keys.seq], args);
    const now = this.sawNow(reply[0]);
    const code = Number(reply[1]);
    if (code < 0) {
      const entry = entries[Number(reply[2]) - 1];
      throw refusal(code, command.topic, entry, reply[3], command.maxPastMs, this.horizonMs);
    }
    if (mode === 'check') return [];
    // Statuses first, then the existing envelope of each kept entry, in entry order.
    let nextExtra = 1 + entries.length;
    return entries.map((entry, n): ScheduleResult => {
      const status = Number(reply[1 + n]);
      if (status === 1 || status === 2) return armed(command.topic, entry, now, status);
      return { action: toStoredAction(command.topic, entry.key, String(reply[nextExtra++]), status === 4, ''), outcome: 'kept' };
    });
  }

  /** Sends every group gathered so far. Bound once: it is both the end-of-tick task and the connection's beforeSend hook. */
  private readonly flush = (): void => {
    if (this.pending.size === 0) return;
    const groups = this.pending;
    this.pending = new Map();
    for (const group of groups.values()) this.send(group);
  };

  private readonly flushAtTickEnd = (): void => {
    this.flushQueued = false;
    this.flush();
  };

  private send(group: PendingGroup): void {
    const { calls } = group;
    if (calls.length === 1) {
      const call = calls[0];
      this.scheduleOne(group.keys, call.command).then(call.resolve, call.reject);
      return;
    }
    this.scheduleEach(group).then(
      (outcomes) =>
        calls.forEach((call, n) => {
          const outcome = outcomes[n];
          if (outcome instanceof Error) call.reject(outcome);
          else call.resolve(outcome);
        }),
      (error: unknown) => {
        for (const call of calls) call.reject(error);
      },
    );
  }

  private async scheduleOne(keys: TopicKeys, command: ScheduleCommand): Promise<ScheduleResult> {
    const [mode, value] = dueArgs(command.due);
    const reply = await this.connection.write<Reply>(
      'schedule',
      [keys.due, keys.env, keys.active, keys.seq],
      [command.key, mode, value, command.payload ?? '', command.ifExists, command.maxPastMs, this.horizonMs, keys.wake, storableTrace(command.trace)],
    );
    const status = Number(reply[0]);
    if (status === 1 || status === 2) return armed(command.topic, command, this.sawNow(reply[1]), status);
    this.sawNow(reply[2]);
    if (status < 0) throw refusal(status, command.topic, command, reply[1], command.maxPastMs, this.horizonMs);
    return { action: toStoredAction(command.topic, command.key, String(reply[1]), Number(reply[3]) === 1, ''), outcome: 'kept' };
  }

  /** The calls of one group in one script call; each gets its result or its own refusal. */
  private async scheduleEach(group: PendingGroup): Promise<Array<ScheduleResult | Error>> {
    const { keys, calls } = group;
    const args: Array<string | number> = [group.maxPastMs, this.horizonMs, keys.wake, '', 'each'];
    for (const { command } of calls) {
      const [mode, value] = dueArgs(command.due);
      args.push(command.key, mode, value, command.payload ?? '', command.ifExists, storableTrace(command.trace));
    }
    const reply = await this.connection.write<Reply>('scheduleMany', [keys.due, keys.env, keys.active, keys.seq], args);
    const now = this.sawNow(reply[0]);
    // Statuses first, then the extras (a kept entry's envelope, a refused entry's due time), in entry order.
    let nextExtra = 1 + calls.length;
    return calls.map(({ command }, n): ScheduleResult | Error => {
      const status = Number(reply[1 + n]);
      if (status === 1 || status === 2) return armed(command.topic, command, now, status);
      if (status === -3) return refusal(status, command.topic, command, '', group.maxPastMs, this.horizonMs);
      const extra = reply[nextExtra++];
      if (status < 0) return refusal(status, command.topic, command, extra, group.maxPastMs, this.horizonMs);
      return { action: toStoredAction(command.topic, command.key, String(extra), status === 4, ''), outcome: 'kept' };
    });
  }

  /** Every script reports the server's time: the consumers' estimate of the skew follows it. */
  private sawNow(now: string | number | undefined): number {
    const serverNow = Number(now);
    this.clockSkew.value = serverNow - Date.now();
    return serverNow;
  }
}

/** A due time as the scripts take it: 'delay' or 'at', then the ms. */
export function dueArgs(due: DueSpec): ['delay' | 'at', number] {
  return 'delayMs' in due ? ['delay', due.delayMs] : ['at', due.atMs];
}

/** The same two arguments appended to `args`, which it returns (a series step is built for every tick: no array of its own). */
export function pushDue(args: Array<string | number>, due: DueSpec): Array<string | number> {
  if ('delayMs' in due) args.push('delay', due.delayMs);
  else args.push('at', due.atMs);
  return args;
}

/**
 * The typed error for a script's refusal: -1 too far in the past, -2 beyond
 * the horizon (the same errors the wheel throws), -3 the key is a batch.
 */
export function refusal(
  code: number,
  topic: string,
  entry: { readonly key: string; readonly due: DueSpec },
  reportedDueAt: string | number | undefined,
  maxPastMs: number,
  horizonMs: number,
): Error {
  if (code === -3) return new ActionKindConflictError(topic, entry.key, 'batch');
  // Lua prints numbers to 14 digits: an absolute time is reported as it was asked for.
  const dueAt = 'atMs' in entry.due ? entry.due.atMs : Number(reportedDueAt);
  if (code === -1) return new DueTimeOutOfRangeError(dueAt, `more than ${maxPastMs} ms in the past (option maxPast)`);
  if (code === -2) return new DueTimeOutOfRangeError(dueAt, `beyond the driver's horizon of ${horizonMs} ms from now`);
  return new Error(`nestjs-delay: unexpected reply ${code} from a schedule script`);
}

/** What a schedule that armed stored: attempt 1, waiting, the payload as given ('' is no payload, as in an envelope). */
function armed(topic: string, entry: { readonly key: string; readonly due: DueSpec; readonly payload: string | undefined }, now: number, status: 1 | 2): ScheduleResult {
  const dueAt = Math.floor('delayMs' in entry.due ? now + entry.due.delayMs : entry.due.atMs);
  const action: StoredAction = { topic, key: entry.key, payload: entry.payload === '' ? undefined : entry.payload, dueAt, attempt: 1, state: 'waiting' };
  return { action, outcome: status === 1 ? 'created' : 'replaced' };
}
