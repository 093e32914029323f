import { DelayClock, TimerHandle } from './clock';
import { Duration, parseDuration } from './duration';

interface VirtualTimer {
  readonly at: number;
  readonly seq: number;
  readonly callback: () => void;
}

/**
 * A clock that only moves when told to. Give it to DelayModule (option
 * `clock`, or override the `DelayClock` provider) and a test can say
 * `await clock.advance('48h')`: every timer due in that span fires in time
 * order, and `advance` returns once the handlers it set off have settled,
 * retries included. Nothing waits in real time.
 *
 * It starts at the time it is created (`Date.now()`), so an `at` computed
 * from the real clock is valid on it too; pass a Date or epoch ms to start
 * somewhere fixed, for tests that assert exact dates.
 */
export class VirtualClock extends DelayClock {
  private current: number;
  private seq = 0;
  private readonly timers = new Set<VirtualTimer>();
  private readonly idleWaiters: Array<{ readonly whenIdle: () => Promise<void>; readonly busy: (() => number) | undefined }> = [];
  /** Promises of `sleep` not yet resolved: runs that wait on this clock, not on real work. */
  private sleepers = 0;

  constructor(start: Date | number = Date.now()) {
    super();
    this.current = typeof start === 'number' ? start : start.getTime();
    if (!Number.isFinite(this.current)) throw new RangeError(`VirtualClock needs a valid start time, got ${String(start)}`);
  }

  now(): number {
    return this.current;
  }

  setTimer(callback: () => void, delayMs: number): TimerHandle {
    const timer: VirtualTimer = { at: this.current + Math.max(0, delayMs), seq: this.seq++, callback };
    this.timers.add(timer);
    return timer;
  }

  clearTimer(handle: TimerHandle): void {
    this.timers.delete(handle as VirtualTimer);
  }

  override trackIdle(whenIdle: () => Promise<void>, busy?: () => number): void {
    this.idleWaiters.push({ whenIdle, busy });
  }

  /**
   * Resolves after `duration` of virtual time: a handler's stand-in for long
   * work (`await clock.sleep('90s')`). While every run in flight sleeps,
   * `advance` goes on firing timers instead of waiting for them.
   */
  sleep(duration: Duration): Promise<void> {
    const ms = parseDuration(duration);
    this.sleepers++;
    return new Promise<void>((resolve) => {
      this.setTimer(() => {
        this.sleepers--;
        resolve();
      }, ms);
    });
  }

  /** Moves time forward by `duration`, firing what falls due on the way. */
  async advance(duration: Duration): Promise<void> {
    await this.advanceTo(this.current + parseDuration(duration));
  }

  /** Moves time forward to `target` (never backwards). */
  async advanceTo(target: Date | number): Promise<void> {
    const end = typeof target === 'number' ? target : target.getTime();
    if (!Number.isFinite(end) || end < this.current) {
      throw new RangeError(`VirtualClock can only move forward (now ${this.current}, asked ${end})`);
    }
    await this.settle();
    for (let next = this.earliest(end); next; next = this.earliest(end)) {
      this.timers.delete(next);
      this.current = next.at;
      next.callback();
      await this.settle();
    }
    this.current = end;
    await this.settle();
  }

  /** Waits until every driver on this clock has nothing in flight. */
  async settle(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (this.sleepers === 0) {
      for (const { whenIdle } of this.idleWaiters) await whenIdle();
      return;
    }
    // Some runs sleep on this clock: settled once nothing else is in flight.
    for (let spins = 0; this.busy() > this.sleepers; spins++) {
      await new Promise<void>((resolve) => (spins < 100 ? setImmediate(resolve) : setTimeout(resolve, 1)));
    }
  }

  private busy(): number {
    let busy = 0;
    for (const { busy: count } of this.idleWaiters) busy += count ? count() : 0;
    return busy;
  }

  /** How many timers are waiting; useful to assert an idle driver arms at most one. */
  get pendingTimers(): number {
    return this.timers.size;
  }

  private earliest(limit: number): VirtualTimer | undefined {
    let best: VirtualTimer | undefined;
    for (const timer of this.timers) {
      if (timer.at > limit) continue;
      if (!best || timer.at < best.at || (timer.at === best.at && timer.seq < best.seq)) best = timer;
    }
    return best;
  }
}
