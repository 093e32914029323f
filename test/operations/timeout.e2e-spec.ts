import { Injectable } from '@nestjs/common';
import { DelayContext, DelayEvent, DelayModule, DelayService, HandlerAbortedError, InvalidDelayOptionsError, OnDelayExpired, VirtualClock } from 'nestjs-delay';
import { useApps } from '../wheel/support/apps';

const TOPIC = 'job.hang';
const TIMEOUT_MS = 100;

/** One run as the handler saw it, and how it ended (never, for a hung one). */
interface Run {
  readonly key: string;
  readonly attempt: number;
  readonly firedAt: number;
  readonly signal: AbortSignal;
  /** Hung runs still going (their handler never settled) when this run started. */
  readonly hungRunning: number;
}

/** 'hung-*' keys never settle; every other key resolves at once. One handler at a time. */
@Injectable()
class HangingWorker {
  readonly runs: Run[] = [];
  hungRunning = 0;

  @OnDelayExpired(TOPIC, { timeout: TIMEOUT_MS, attempts: 2, backoff: '1s', concurrency: 1 })
  work({ key, attempt, firedAt, signal }: DelayContext): Promise<void> | void {
    this.runs.push({ key, attempt, firedAt: firedAt.getTime(), signal, hungRunning: this.hungRunning });
    if (!key.startsWith('hung')) return;
    this.hungRunning++;
    return new Promise<void>(() => undefined);
  }
}

/** Honours its signal: stops (rejects) as soon as it aborts. */
@Injectable()
class CooperativeWorker {
  reasons: unknown[] = [];

  @OnDelayExpired('job.cooperative', { timeout: 50, attempts: 1 })
  work({ signal }: DelayContext): Promise<void> {
    return new Promise<void>((_, reject) => {
      signal.addEventListener('abort', () => {
        this.reasons.push(signal.reason);
        reject(signal.reason as Error);
      });
    });
  }
}

/** Runs for ever unless aborted; no timeout of its own (module default off). */
@Injectable()
class EndlessWorker {
  readonly signals: AbortSignal[] = [];

  @OnDelayExpired('job.endless')
  work({ signal }: DelayContext): Promise<void> {
    this.signals.push(signal);
    return new Promise<void>(() => undefined);
  }
}

/** Real time, to bound a call that must not hang. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not return within ${ms} ms`)), ms);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

describe('handler timeout (wheel driver)', () => {
  const apps = useApps();
  let clock: VirtualClock;

  beforeEach(() => {
    clock = new VirtualClock();
  });

  it('gives up a hung run at its timeout: the slot goes to the next action, the run is retried, then dead, and advance() returns', async () => {
    const app = await apps.boot({ imports: [DelayModule.forRoot({ clock, driver: { type: 'wheel', tickMs: 1 } })], providers: [HangingWorker] });
    const delay = app.get(DelayService);
    const worker = app.get(HangingWorker);
    const events: DelayEvent[] = [];
    delay.events$.subscribe((event) => events.push(event));
    const start = clock.now();

    await delay.schedule(TOPIC, 'hung-1', { delay: '1s' });
    await delay.schedule(TOPIC, 'ok-1', { delay: '1s' });
    await within(clock.advance('1m'), 10_000, 'advance over a hung handler');

    expect(worker.runs.map((run) => [run.key, run.attempt, run.firedAt - start])).toEqual([
      ['hung-1', 1, 1_000],
      // Concurrency 1, yet it ran at its due time: the hung run's slot was freed at its timeout...
      ['ok-1', 1, 1_000],
      ['hung-1', 2, 2_000],
    ]);
    // ...while that hung handler was still going (it never settles).
    expect(worker.runs[1].hungRunning).toBe(1);
    for (const run of [worker.runs[0], worker.runs[2]]) {
      expect(run.signal.aborted).toBe(true);
      expect(run.signal.reason).toBeInstanceOf(HandlerAbortedError);
      expect(run.signal.reason).toMatchObject({ code: 'ERR_DELAY_HANDLER_ABORTED', reason: 'timeout' });
    }
    expect(worker.runs[1].signal.aborted).toBe(false);

    const dead = await delay.listDead(TOPIC);
    expect(dead.items.map((action) => [action.key, action.attempts, action.error])).toEqual([['hung-1', 2, `timed out after ${TIMEOUT_MS} ms`]]);
    expect(await delay.count(TOPIC)).toBe(0);
    const hung = events.filter((event) => event.key === 'hung-1').map((event) => [event.type, event.attempt]);
    expect(hung).toEqual([
      ['scheduled', 1],
      ['fired', 1],
      ['timedOut', 1],
      ['failed', 1],
      ['retrying', 1],
      ['fired', 2],
      ['timedOut', 2],
      ['failed', 2],
      ['dead', 2],
    ]);
    expect(events.find((event) => event.type === 'timedOut')?.error).toBe(`timed out after ${TIMEOUT_MS} ms`);
  });

  it('a handler that honours its signal stops at the timeout, and its own rejection changes nothing more', async () => {
    const app = await apps.boot({ imports: [DelayModule.forRoot({ clock, driver: { type: 'wheel', tickMs: 1 } })], providers: [CooperativeWorker] });
    const delay = app.get(DelayService);
    const worker = app.get(CooperativeWorker);

    await delay.schedule('job.cooperative', 'c-1', { delay: 10 });
    await within(clock.advance('1s'), 10_000, 'advance');

    expect(worker.reasons).toHaveLength(1);
    expect(worker.reasons[0]).toMatchObject({ reason: 'timeout' });
    const dead = await delay.listDead('job.cooperative');
    expect(dead.items.map((action) => action.error)).toEqual(['timed out after 50 ms']);
  });

  it('with timeout false in the defaults a run may take as long as it likes; shutdown aborts it once shutdownTimeout has passed', async () => {
    const app = await apps.boot({ imports: [DelayModule.forRoot({ defaults: { timeout: false }, shutdownTimeout: 100 })], providers: [EndlessWorker] });
    const delay = app.get(DelayService);
    const worker = app.get(EndlessWorker);

    await delay.schedule('job.endless', 'e-1', { delay: 0 });
    const started = performance.now();
    while (worker.signals.length === 0 && performance.now() - started < 5_000) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(worker.signals).toHaveLength(1);
    // Well past where a timeout would have struck, had there been one: still running.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(worker.signals[0].aborted).toBe(false);
    expect((await delay.get('job.endless', 'e-1'))?.state).toBe('running');

    await within(app.close(), 10_000, 'app.close() over an endless handler');
    expect(worker.signals[0].aborted).toBe(true);
    expect(worker.signals[0].reason).toMatchObject({ code: 'ERR_DELAY_HANDLER_ABORTED', reason: 'shutdown' });
  });

  it.each([
    [{ timeout: 0 }, 'timeout must be at least 1 ms'],
    [{ timeout: '30 parsecs' }, 'timeout: '],
    [{ timeout: '30d' }, 'timeout must be at most'],
  ])('refuses the handler option %j at bootstrap', async (options, message) => {
    @Injectable()
    class BadTimeout {
      @OnDelayExpired('job.bad', options as { timeout: number })
      work(): void {
        // Never runs.
      }
    }
    const app = await apps.create({ imports: [DelayModule.forRoot({ clock })], providers: [BadTimeout] });
    const init = app.init();
    await expect(init).rejects.toBeInstanceOf(InvalidDelayOptionsError);
    await expect(init).rejects.toThrow(message);
  });

  it('refuses a bad module default', async () => {
    await expect(apps.create({ imports: [DelayModule.forRoot({ clock, defaults: { timeout: -5 } })] })).rejects.toThrow(/defaults\.timeout: .*negative/);
  });
});
