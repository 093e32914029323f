import { INestApplication, Injectable } from '@nestjs/common';
import { DelayContext, DelayDriverConfig, DelayEvent, DelayModuleOptions, DelayService, OnDelayExpired } from 'nestjs-delay';
import { Subscription } from 'rxjs';
import { bootDelayApp } from '../../conformance/support/driver-fixture';
import { FaultLedger, FaultRun } from './fault-ledger';
import { settleWithin } from '../../../libs/delay/src/utils/settle-within';

/** The topics of the fault tests. */
export const FAULT = {
  /** 5 attempts, 100 ms apart; up to 50 at once. */
  basic: 'fault.basic',
  /** Like basic, but 3 at once: a run whose outcome call hangs holds one of only three slots. */
  narrow: 'fault.narrow',
  /** One attempt: a second claim of the same arming dead-letters it. */
  once: 'fault.once',
  /** Batches (collect). */
  batch: 'fault.batch',
} as const;

/**
 * The Redis driver options issue-era drivers know, plus the fault-handling
 * ones: typed here so these tests compile whether or not the driver in this
 * tree declares them yet.
 */
export interface FaultDriverOptions {
  /** Every Redis call settles within it. */
  readonly commandTimeout?: string;
  /** Writes resolve once this many replicas have them. */
  readonly waitForReplicas?: { readonly replicas: number; readonly timeout?: string };
  /** The idle re-check and subscriber keep-alive period. */
  readonly wakeCheck?: string;
}

/** The Redis driver's config, as the public types give it. */
type RedisDriverConfig = Extract<DelayDriverConfig, { readonly type: 'redis' }>;

export type FaultDriverConfig = RedisDriverConfig & FaultDriverOptions;

/** Short periods, so a fault heals in about a second and the suite stays fast. */
export const FAST: FaultDriverOptions & Pick<RedisDriverConfig, 'lease'> = { commandTimeout: '1s', lease: '2s', wakeCheck: '1s' };
export const COMMAND_TIMEOUT_MS = 1_000;

/** What a handler does for one run before it resolves; by default nothing. */
export type Hold = (run: FaultRun) => Promise<void> | void;

/** The handlers of every fault topic: each run is written to the ledger the test reads. */
@Injectable()
export class FaultHandlers {
  ledger = new FaultLedger();
  hold: Hold = () => undefined;
  running = 0;

  @OnDelayExpired(FAULT.basic, { attempts: 5, backoff: '100ms', concurrency: 50 })
  onBasic(context: DelayContext): Promise<void> {
    return this.run(context);
  }

  @OnDelayExpired(FAULT.narrow, { attempts: 5, backoff: '100ms', concurrency: 3 })
  onNarrow(context: DelayContext): Promise<void> {
    return this.run(context);
  }

  @OnDelayExpired(FAULT.once, { attempts: 1, concurrency: 50 })
  onOnce(context: DelayContext): Promise<void> {
    return this.run(context);
  }

  @OnDelayExpired(FAULT.batch, { attempts: 3, backoff: '100ms', concurrency: 10 })
  onBatch(context: DelayContext): Promise<void> {
    return this.run(context);
  }

  private async run(context: DelayContext): Promise<void> {
    const run: FaultRun = {
      topic: context.topic,
      key: context.key,
      dueAt: context.dueAt.getTime(),
      firedAt: context.firedAt.getTime(),
      startedAt: Date.now(),
      attempt: context.attempt,
      items: context.items,
    };
    this.ledger.ran(run);
    this.running++;
    try {
      await this.hold(run);
    } finally {
      this.running--;
    }
  }
}

/** Real time, whatever else the test does. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** Rejects with a clear message when `promise` has not settled within `ms`: a hang becomes a failure. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return settleWithin(promise, ms, () => new Error(`${what} did not settle within ${ms} ms (a hang)`));
}

/** Polls until `condition` holds; false (not a throw) when `ms` ran out, so the test can report its counts. */
export async function eventually(condition: () => boolean | Promise<boolean>, ms: number, everyMs = 20): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      if (await within(Promise.resolve(condition()), Math.max(everyMs, 2_000), 'a condition check')) return true;
    } catch {
      // A check that failed or hung is a "not yet".
    }
    if (Date.now() > deadline) return false;
    await sleep(everyMs);
  }
}

export interface FaultApp {
  readonly app: INestApplication;
  readonly delay: DelayService;
  readonly handlers: FaultHandlers;
  readonly events: DelayEvent[];
}

/**
 * The apps of one spec file: booted with the fault topics' handlers and the
 * short periods, and closed after each test, within a bound even if the
 * driver hangs (a hung close is reported, not waited for).
 */
export function faultApps(): { boot(driver: FaultDriverConfig, options?: Partial<DelayModuleOptions>): Promise<FaultApp>; closeAll(): Promise<string[]> } {
  const open: Array<{ app: INestApplication; subscription: Subscription }> = [];
  let prefixes = 0;
  const closeAll = async (): Promise<string[]> => {
    const problems: string[] = [];
    for (const { app, subscription } of open.splice(0)) {
      subscription.unsubscribe();
      app.get(FaultHandlers).hold = () => undefined;
      await within(app.close(), 5_000, 'app.close()').catch((error: Error) => problems.push(error.message));
    }
    return problems;
  };
  afterEach(async () => {
    await closeAll();
  });
  return {
    closeAll,
    boot: async (driver, options = {}) => {
      prefixes++;
      const config: FaultDriverConfig = { prefix: `fault-${process.pid}-${prefixes}`, ...FAST, ...driver };
      const app = await within(bootDelayApp({ shutdownTimeout: '1s', ...options, driver: config }, [FaultHandlers]), 10_000, 'the app boot');
      const delay = app.get(DelayService);
      const events: DelayEvent[] = [];
      const subscription = delay.events$.subscribe((event) => events.push(event));
      open.push({ app, subscription });
      return { app, delay, handlers: app.get(FaultHandlers), events };
    },
  };
}

/** The tally as one line, for test output. */
export function describeTally(tally: ReturnType<FaultLedger['tally']>): string {
  return (
    `scheduled ${tally.scheduled}, fired ${tally.fired}, fired twice ${tally.firedTwice}, lost ${tally.lost}, early ${tally.early}, ` +
    `fired after cancel ${tally.firedAfterCancel}, expected losses ${tally.forgiven}, unknown runs ${tally.unknownRuns}`
  );
}

/** Prints a figure of a fault test to the terminal (the suite's reports, not debugging output). */
export function report(line: string, tag = 'faults'): void {
  process.stdout.write(`  [${tag}] ${line}\n`);
}
