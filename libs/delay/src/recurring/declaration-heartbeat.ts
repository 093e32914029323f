import { Logger } from '@nestjs/common';
import { DelayDriver } from '../interfaces/delay-driver.interface';
import { DelayClock, TimerHandle } from '../time/clock';
import { describeError } from '../utils/describe-error';

/** While the store refuses, beats are tried this often: marks must be back soon after the store is, before ticks find them passed. */
const FAILING_RETRY_MS = 1_000;

/** The schedules one topic declares in code with orphan policy 'remove'. */
export interface DeclaredKeys {
  readonly topic: string;
  readonly keys: readonly string[];
}

/**
 * Tells the store, at bootstrap and then every third of the orphan grace,
 * that this instance still declares its @Recurring schedules (orphan policy
 * 'remove'): each mark says "declared until now + grace". A schedule's tick
 * removes the schedule once its mark has passed, that is once no running
 * instance has declared it for a whole grace. The cost is one write per
 * topic (per shard on Redis) per beat, whatever the number of ticks.
 */
export class DeclarationHeartbeat {
  private readonly logger = new Logger(DeclarationHeartbeat.name);
  private timer: TimerHandle | undefined;
  private stopped = false;
  private failing = false;

  constructor(
    private readonly driver: DelayDriver,
    private readonly clock: DelayClock,
    private readonly graceMs: number,
    private readonly declared: readonly DeclaredKeys[],
  ) {}

  /** How often the marks are renewed: three beats fit in a grace, so one or two lost ones do not orphan anything. */
  get intervalMs(): number {
    return Math.max(1, Math.floor(this.graceMs / 3));
  }

  /** Marks every declared schedule now (bootstrap fails if the store refuses), then keeps beating. */
  async start(): Promise<void> {
    if (!this.driver.declareSeries || this.declared.length === 0) return;
    await this.beat();
    this.arm();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
  }

  private arm(delayMs = this.intervalMs): void {
    if (this.stopped) return;
    this.timer = this.clock.setTimer(() => {
      this.timer = undefined;
      void this.beat().then(
        () => {
          if (this.failing) this.logger.log('Declarations of recurring schedules are marked again');
          this.failing = false;
          this.arm();
        },
        (error: unknown) => {
          // Two more beats fit in the grace before a declared schedule could be taken for an orphan.
          if (!this.failing) this.logger.warn(`Could not mark this instance's recurring declarations (${describeError(error)}); trying again every ${Math.min(FAILING_RETRY_MS, this.intervalMs)} ms`);
          this.failing = true;
          this.arm(FAILING_RETRY_MS);
        },
      );
    }, Math.min(delayMs, this.intervalMs));
  }

  private async beat(): Promise<void> {
    const declare = this.driver.declareSeries;
    if (!declare) return;
    await Promise.all(this.declared.map(({ topic, keys }) => declare.call(this.driver, topic, keys, this.graceMs)));
  }
}
