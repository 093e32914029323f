import { Injectable } from '@nestjs/common';
import { DelayContext, DelayModule, DelayService, OnDelayExpired, VirtualClock } from 'nestjs-delay';
import { useApps } from './support/apps';

/** A handler that takes `workMs` of real time, and tells when it started and finished. */
@Injectable()
class SlowHandler {
  workMs = 200;
  finishedAt: number | undefined;
  readonly runs: string[] = [];
  private startedResolve: () => void = () => undefined;
  readonly started = new Promise<void>((resolve) => (this.startedResolve = resolve));

  @OnDelayExpired('report.build')
  async build({ key }: DelayContext): Promise<void> {
    this.runs.push(key);
    this.startedResolve();
    await new Promise((resolve) => setTimeout(resolve, this.workMs));
    this.finishedAt = Date.now();
  }
}

// Real waiting is the point here, so the handler takes real time; each wait stays under 300 ms.
describe('shutdown (wheel driver, real time)', () => {
  const apps = useApps();

  it('app.close() waits for a handler that is running', async () => {
    const app = await apps.boot({ imports: [DelayModule.forRoot({ driver: { type: 'wheel', tickMs: 1 } })], providers: [SlowHandler] });
    const handler = app.get(SlowHandler);
    await app.get(DelayService).schedule('report.build', 'r-1', { delay: 0 });
    await handler.started;
    expect(handler.finishedAt).toBeUndefined();

    await app.close();
    const closedAt = Date.now();
    expect(handler.finishedAt).toBeDefined();
    expect(closedAt).toBeGreaterThanOrEqual(handler.finishedAt as number);
  });

  it('app.close() stops waiting after shutdownTimeout', async () => {
    const app = await apps.boot({
      imports: [DelayModule.forRoot({ driver: { type: 'wheel', tickMs: 1 }, shutdownTimeout: 50 })],
      providers: [SlowHandler],
    });
    const handler = app.get(SlowHandler);
    handler.workMs = 250;
    await app.get(DelayService).schedule('report.build', 'r-1', { delay: 0 });
    await handler.started;
    await app.close();
    // close() returned while the handler was still at work.
    expect(handler.finishedAt).toBeUndefined();
    // Let the abandoned handler end inside this test.
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(handler.finishedAt).toBeDefined();
  });

  it('starts no new handler once shutdown has begun', async () => {
    // Virtual time for what falls due after close; the running handler still takes 30 ms of real time.
    const clock = new VirtualClock();
    const app = await apps.boot({ imports: [DelayModule.forRoot({ clock, driver: { type: 'wheel', tickMs: 1 } })], providers: [SlowHandler] });
    const handler = app.get(SlowHandler);
    handler.workMs = 30;
    const delay = app.get(DelayService);
    // Due at the clock's current time, which is the driver's start: it runs at once, with no advance.
    await delay.schedule('report.build', 'now', { delay: 0 });
    await delay.schedule('report.build', 'later', { delay: '1m' });
    await handler.started;
    await app.close();
    expect(handler.runs).toEqual(['now']);
    expect(handler.finishedAt).toBeDefined();
    await clock.advance('1h');
    expect(handler.runs).toEqual(['now']);
  });
});
