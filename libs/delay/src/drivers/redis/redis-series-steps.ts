import { DriverUnavailableError } from '../../errors/driver-unavailable.error';
import { RedisConnection } from './redis-connection';

/** advance-series.lua's reply. */
export type SeriesStepReply = Array<string | number>;

/** At most this many steps go in one script call (it holds Redis for all of them). */
const MAX_GATHERED = 256;

interface PendingStep {
  readonly args: Array<string | number>;
  resolve(reply: SeriesStepReply): void;
  reject(error: unknown): void;
}

/** The steps of one tick for one shard: its nine keys, and the steps in the order made. */
interface PendingGroup {
  readonly keys: string[];
  readonly steps: PendingStep[];
}

/**
 * Steps recurring series of a shard (advance-series.lua). The steps made in
 * the same tick for the same shard (the ticks one claim took, run at once)
 * go in one advance-series-many call: each is made exactly as alone, in the
 * order made, but Redis runs one script and the client sends one command
 * for all of them. A step alone in its tick goes through advance-series.lua.
 *
 * Every other command of the connection first sends what was gathered
 * (RedisConnection.beforeSend), so a command issued after a step still
 * reaches Redis after it. A gathered call that fails as a whole for want of
 * Redis (time bound, lost connection) fails each of its steps with that
 * error, as each would have failed alone; one Redis refused (a script
 * error) is sent again step by step, so each caller gets its own reply or
 * its own error.
 */
export class RedisSeriesSteps {
  private pending = new Map<string, PendingGroup>();
  private flushQueued = false;

  constructor(private readonly connection: RedisConnection) {
    connection.beforeSend(this.flush);
  }

  /** One step: `keys` those of advance-series.lua (the series' shard), `args` its ARGV. */
  step(keys: string[], args: Array<string | number>): Promise<SeriesStepReply> {
    // Schedules and cancels gathered before this step leave before it.
    this.connection.sendGatheredBefore(this.flush);
    return new Promise<SeriesStepReply>((resolve, reject) => {
      // The shard's env hash names the shard: every key of a group is the same.
      const shard = keys[1];
      let group = this.pending.get(shard);
      if (group === undefined) {
        group = { keys, steps: [] };
        this.pending.set(shard, group);
      }
      group.steps.push({ args, resolve, reject });
      if (group.steps.length >= MAX_GATHERED) {
        this.pending.delete(shard);
        this.send(group);
      } else if (!this.flushQueued) {
        this.flushQueued = true;
        process.nextTick(this.flushAtTickEnd);
      }
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
    const { keys, steps } = group;
    if (steps.length === 1) {
      this.sendAlone(keys, steps[0]);
      return;
    }
    const args: Array<string | number> = [steps.length];
    for (const step of steps) args.push(step.args.length, ...step.args);
    this.connection.write<SeriesStepReply[]>('advanceSeriesMany', keys, args).then(
      (replies) => steps.forEach((step, n) => step.resolve(replies[n])),
      (error: unknown) => {
        if (error instanceof DriverUnavailableError) for (const step of steps) step.reject(error);
        // Refused by Redis as a whole (a script error stops the call there, with the steps before it made): each
        // again alone, in order; a step already made finds its condition gone, as a retry of it alone would.
        else for (const step of steps) this.sendAlone(keys, step);
      },
    );
  }

  private sendAlone(keys: string[], step: PendingStep): void {
    this.connection.write<SeriesStepReply>('advanceSeries', keys, step.args).then(step.resolve, step.reject);
  }
}
