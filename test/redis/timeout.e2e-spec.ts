import { Injectable } from '@nestjs/common';
import { DelayContext, DelayEvent, DelayService, OnDelayExpired } from 'nestjs-delay';
import { pollUntil } from '../conformance/support/driver-fixture';
import { redisAppSuite } from './support/redis-app-suite';

const TOPIC = 'redis.hang';
const TIMEOUT_MS = 300;

/** 'hung-*' keys never settle; others resolve at once. One handler at a time. */
@Injectable()
class HangingWorker {
  readonly runs: Array<{ key: string; attempt: number; at: number; signal: AbortSignal; hungRunning: number }> = [];
  hungRunning = 0;

  @OnDelayExpired(TOPIC, { timeout: TIMEOUT_MS, attempts: 2, backoff: 500, concurrency: 1 })
  work({ key, attempt, signal }: DelayContext): Promise<void> | void {
    this.runs.push({ key, attempt, at: Date.now(), signal, hungRunning: this.hungRunning });
    if (!key.startsWith('hung')) return;
    this.hungRunning++;
    return new Promise<void>(() => undefined);
  }
}

describe('handler timeout (Redis driver)', () => {
  const suite = redisAppSuite();

  it('gives up a hung run at its timeout: its lease is let go, its slot runs the next action, and it is retried, then dead', async () => {
    const prefix = 'timeout';
    const app = await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix, lease: '1s' }, shutdownTimeout: 200 }, [HangingWorker]);
    const delay = app.get(DelayService);
    const worker = app.get(HangingWorker);
    const events: DelayEvent[] = [];
    delay.events$.subscribe((event) => events.push(event));

    await delay.schedule(TOPIC, 'hung-1', { delay: 50 });
    await delay.schedule(TOPIC, 'ok-1', { delay: 60 });
    await pollUntil(async () => (await delay.countDead(TOPIC)) === 1, 'the hung action to die', 10_000, 20);

    expect(worker.runs.map((run) => [run.key, run.attempt])).toEqual([
      ['hung-1', 1],
      ['ok-1', 1],
      ['hung-1', 2],
    ]);
    // Concurrency 1, yet ok-1 ran while the first hung handler was still going: its slot was freed at the timeout.
    expect(worker.runs[1].hungRunning).toBe(1);
    expect(worker.runs[1].at - worker.runs[0].at).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
    expect(worker.runs[2].at - worker.runs[0].at).toBeGreaterThanOrEqual(TIMEOUT_MS + 500 - 5);
    expect(worker.runs[0].signal.aborted && worker.runs[2].signal.aborted).toBe(true);
    expect(worker.runs[1].signal.aborted).toBe(false);

    const dead = await delay.listDead(TOPIC);
    expect(dead.items.map((action) => [action.key, action.attempts, action.error])).toEqual([['hung-1', 2, `timed out after ${TIMEOUT_MS} ms`]]);
    expect(await delay.count(TOPIC)).toBe(0);
    // Nothing is leased any more: the hung runs' leases were let go, not renewed.
    expect(await suite.raw().zcard(`${prefix}:{${TOPIC}}:active`)).toBe(0);
    expect(events.filter((event) => event.type === 'timedOut').map((event) => [event.key, event.attempt, event.error])).toEqual([
      ['hung-1', 1, `timed out after ${TIMEOUT_MS} ms`],
      ['hung-1', 2, `timed out after ${TIMEOUT_MS} ms`],
    ]);

    // Well past the 1 s lease: no instance redelivers the dead action.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(worker.runs).toHaveLength(3);
  });
});
