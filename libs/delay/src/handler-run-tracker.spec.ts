import { HandlerAbortedError } from './errors/handler-aborted.error';
import { RegisteredHandler } from './delay-handler.registry';
import { HandlerRun } from './handler-run';
import { HandlerRunTracker } from './handler-run-tracker';
import { Delivery } from './interfaces/delay-driver.interface';

const delivery: Delivery = { topic: 't', key: 'k', payload: undefined, dueAt: 0, firedAt: 0, attempt: 1, token: '1' };

function run(timeoutMs: number | undefined): HandlerRun {
  const handler: RegisteredHandler = {
    topic: 't',
    name: 'Test.run',
    options: { attempts: 1, backoff: { type: 'fixed', delayMs: 1_000, maxDelayMs: 1_000 }, concurrency: 1, timeoutMs, transactional: false },
    invoke: () => undefined,
  };
  return new HandlerRun(handler, delivery, timeoutMs === undefined ? Infinity : performance.now() + timeoutMs, () => undefined);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('HandlerRunTracker', () => {
  it('times out a run with a short timeout started after one with a long timeout, without waiting for the long one', async () => {
    const expired: HandlerRun[] = [];
    const tracker = new HandlerRunTracker((r) => expired.push(r));
    const long = run(60_000);
    const short = run(30);
    const none = run(undefined);
    tracker.add(long);
    tracker.add(none);
    tracker.add(short);
    expect(tracker.size).toBe(3);

    await sleep(300);
    expect(expired).toEqual([short]);
    expect(tracker.size).toBe(2);
    expect(tracker.takeAll().sort((a, b) => a.deadline - b.deadline)).toEqual([long, none]);
    expect(tracker.size).toBe(0);
  });

  it('never times out a run removed before its deadline, and expires the rest in start order', async () => {
    const expired: HandlerRun[] = [];
    const tracker = new HandlerRunTracker((r) => expired.push(r));
    const runs = [run(20), run(20), run(20)];
    for (const r of runs) tracker.add(r);
    tracker.remove(runs[1]);
    tracker.remove(runs[0]);
    await sleep(300);
    expect(expired).toEqual([runs[2]]);
    expect(tracker.size).toBe(0);
  });

  it('a run restarted (a transactional handler done, its shared commit pending) times out a whole timeout after the restart, the others at theirs', async () => {
    const expiredAt = new Map<HandlerRun, number>();
    const tracker = new HandlerRunTracker((r) => expiredAt.set(r, performance.now()));
    const runs = [run(150), run(150), run(150)];
    const started = performance.now();
    for (const r of runs) tracker.add(r);
    await sleep(100);
    const restarted = performance.now();
    tracker.restart(runs[1]);
    expect(tracker.size).toBe(3);
    while (expiredAt.size < 3) await sleep(20);
    // Timers never fire early, however busy the machine: each at or after its own deadline.
    expect(expiredAt.get(runs[0])! - started).toBeGreaterThanOrEqual(149);
    expect(expiredAt.get(runs[2])! - started).toBeGreaterThanOrEqual(149);
    expect(expiredAt.get(runs[1])! - restarted).toBeGreaterThanOrEqual(149);
    expect(expiredAt.get(runs[1])!).toBeGreaterThanOrEqual(Math.max(expiredAt.get(runs[0])!, expiredAt.get(runs[2])!));
    expect(tracker.size).toBe(0);
  });

  it('a signal read after the run was aborted is already aborted, with the reason', () => {
    const r = run(10);
    const reason = new HandlerAbortedError('timeout', 'late');
    r.abort(reason);
    expect(r.signal.aborted).toBe(true);
    expect(r.signal.reason).toBe(reason);
  });
});
