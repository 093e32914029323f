/** An opaque handle returned by {@link DelayClock.setTimer}. */
export type TimerHandle = unknown;

/**
 * Where an in-process driver reads the time and sets its one timer. The
 * default is the system clock; tests swap in a {@link VirtualClock}.
 */
export abstract class DelayClock {
  abstract now(): number;
  /** Calls `callback` once, `delayMs` from now. Any delay is allowed, even years. */
  abstract setTimer(callback: () => void, delayMs: number): TimerHandle;
  abstract clearTimer(handle: TimerHandle): void;
  /**
   * Lets a driver tell the clock how to wait until the work it started has
   * settled. The system clock ignores it; the virtual clock awaits it after
   * each timer it fires, so `advance()` returns once handlers are done.
   * `busy`, when given, counts the runs in flight, so the virtual clock can
   * tell when every one of them waits on its own `sleep` (time then moves on).
   */
  trackIdle(_whenIdle: () => Promise<void>, _busy?: () => number): void {
    // Real time needs no settling.
  }
}

/** Node's setTimeout takes at most 2^31-1 ms; longer timers are chained. */
const MAX_TIMEOUT_MS = 2_147_483_647;

interface SystemTimer {
  timeout: NodeJS.Timeout;
}

export class SystemClock extends DelayClock {
  now(): number {
    return Date.now();
  }

  setTimer(callback: () => void, delayMs: number): TimerHandle {
    const timer: SystemTimer = { timeout: undefined as unknown as NodeJS.Timeout };
    const dueAt = Date.now() + delayMs;
    const arm = (): void => {
      const remaining = dueAt - Date.now();
      if (remaining > MAX_TIMEOUT_MS) {
        timer.timeout = setTimeout(arm, MAX_TIMEOUT_MS);
      } else {
        timer.timeout = setTimeout(callback, Math.max(0, remaining));
      }
    };
    arm();
    return timer;
  }

  clearTimer(handle: TimerHandle): void {
    clearTimeout((handle as SystemTimer).timeout);
  }
}
