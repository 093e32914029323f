import { Injectable } from '@nestjs/common';
import { Subscription } from 'rxjs';
import { DelayContext, DelayEvent, DelayModule, DelayService, InvalidDurationError, InvalidKeyError, OnDelayExpired, VirtualClock } from 'nestjs-delay';
import { useApps } from './support/apps';

@Injectable()
class Jobs {
  @OnDelayExpired('job.run', { attempts: 2, backoff: '1s' })
  run({ key }: DelayContext): void {
    if (key.startsWith('bad')) throw new Error(`cannot run ${key}`);
  }
}

describe('DelayService.events$ (wheel driver)', () => {
  const apps = useApps();
  let subscription: Subscription | undefined;

  afterEach(() => subscription?.unsubscribe());

  it('emits scheduled, rescheduled, cancelled, fired, completed, failed, retrying, dead and redriven', async () => {
    const clock = new VirtualClock();
    const app = await apps.boot({ imports: [DelayModule.forRoot({ clock, driver: { type: 'wheel', tickMs: 1 } })], providers: [Jobs] });
    const delay = app.get(DelayService);
    const events: DelayEvent[] = [];
    subscription = delay.events$.subscribe((event) => events.push(event));
    const start = clock.now();

    await delay.schedule('job.run', 'good', { delay: '1s' });
    await delay.schedule('job.run', 'bad', { delay: '2s' });
    await delay.schedule('job.run', 'gone', { delay: '3s' });
    await delay.reschedule('job.run', 'good', { delay: '500ms' });
    await delay.cancel('job.run', 'gone');
    // 'keep' on an existing action changes nothing, so it is not reported.
    await delay.schedule('job.run', 'bad', { delay: '1h', ifExists: 'keep' });
    await clock.advance('1h');

    const summary = (key: string): Array<[string, number]> => events.filter((event) => event.key === key).map((event) => [event.type, event.at.getTime() - start]);
    expect(summary('good')).toEqual([
      ['scheduled', 0],
      ['rescheduled', 0],
      ['fired', 500],
      ['completed', 500],
    ]);
    expect(summary('gone')).toEqual([
      ['scheduled', 0],
      ['cancelled', 0],
    ]);
    expect(summary('bad')).toEqual([
      ['scheduled', 0],
      ['fired', 2_000],
      ['failed', 2_000],
      ['retrying', 2_000],
      ['fired', 3_000],
      ['failed', 3_000],
      ['dead', 3_000],
    ]);

    const retrying = events.find((event) => event.type === 'retrying');
    expect(retrying).toMatchObject({ topic: 'job.run', key: 'bad', attempt: 1, error: 'cannot run bad', retryAt: new Date(start + 3_000) });
    expect(events.find((event) => event.type === 'dead')).toMatchObject({ attempt: 2, error: 'cannot run bad' });
    expect(events.find((event) => event.type === 'scheduled' && event.key === 'good')).toMatchObject({ topic: 'job.run', dueAt: new Date(start + 1_000), attempt: 1 });
    expect(events.find((event) => event.type === 'fired' && event.key === 'good')).toMatchObject({ dueAt: new Date(start + 500), attempt: 1 });

    events.length = 0;
    await delay.redrive('job.run', 'bad');
    expect(events.map((event) => [event.type, event.key])).toEqual([['redriven', 'bad']]);
  });

  it('emits nothing for a call that is refused', async () => {
    const clock = new VirtualClock();
    const app = await apps.boot({ imports: [DelayModule.forRoot({ clock })], providers: [Jobs] });
    const delay = app.get(DelayService);
    const events: DelayEvent[] = [];
    subscription = delay.events$.subscribe((event) => events.push(event));
    await expect(delay.schedule('job.run', '', { delay: '1s' })).rejects.toBeInstanceOf(InvalidKeyError);
    await expect(delay.schedule('job.run', 'k', { delay: 'soon' })).rejects.toBeInstanceOf(InvalidDurationError);
    expect(await delay.cancel('job.run', 'nothing-here')).toBe(false);
    expect(await delay.reschedule('job.run', 'nothing-here', { delay: '1s' })).toBeNull();
    expect(events).toEqual([]);
  });

  it('completes the stream when the application closes', async () => {
    const clock = new VirtualClock();
    const app = await apps.boot({ imports: [DelayModule.forRoot({ clock })] });
    let completed = false;
    subscription = app.get(DelayService).events$.subscribe({ complete: () => (completed = true) });
    await app.close();
    expect(completed).toBe(true);
  });
});
