/**
 * Counts handlers running in this process and lets shutdown (and the
 * virtual clock) wait until there are none.
 */
export class InFlightTracker {
  private running = 0;
  private waiters: Array<() => void> = [];

  get size(): number {
    return this.running;
  }

  enter(): void {
    this.running++;
  }

  leave(): void {
    this.running--;
    if (this.running === 0 && this.waiters.length > 0) {
      const waiters = this.waiters;
      this.waiters = [];
      for (const wake of waiters) wake();
    }
  }

  /** Resolves when nothing runs, or after `timeoutMs`; true if it emptied in time. */
  whenEmpty(timeoutMs = Infinity): Promise<boolean> {
    if (this.running === 0) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const wake = (): void => {
        if (timer) clearTimeout(timer);
        resolve(true);
      };
      this.waiters.push(wake);
      if (Number.isFinite(timeoutMs)) {
        timer = setTimeout(() => {
          this.waiters = this.waiters.filter((w) => w !== wake);
          resolve(false);
        }, timeoutMs);
      }
    });
  }
}
