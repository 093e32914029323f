import { Injectable } from '@nestjs/common';
import { DelayContext, DelayModule, DelayService, OnDelayExpired, VirtualClock } from 'nestjs-delay';
import { useApps } from './support/apps';

const TOPIC = 'invoice.send';

/** Fails while `failing` is true; records every attempt. */
@Injectable()
class FlakyMailer {
  failing = true;
  readonly attempts: Array<{ key: string; attempt: number; firedAt: number; dueAt: number; payload: unknown }> = [];

  @OnDelayExpired(TOPIC, { attempts: 4, backoff: { type: 'exponential', delay: '1s', maxDelay: '3s' } })
  async send({ key, attempt, firedAt, dueAt, payload }: DelayContext): Promise<void> {
    this.attempts.push({ key, attempt, firedAt: firedAt.getTime(), dueAt: dueAt.getTime(), payload });
    if (this.failing) throw new Error(`SMTP down (attempt ${attempt})`);
  }
}

@Injectable()
class FixedBackoffHandler {
  readonly firedAt: number[] = [];

  @OnDelayExpired('fixed.backoff', { attempts: 3, backoff: '5s' })
  run({ firedAt }: DelayContext): void {
    this.firedAt.push(firedAt.getTime());
    throw new Error('always');
  }
}

describe('retries, dead letters and redrive (wheel driver)', () => {
  const apps = useApps();
  let clock: VirtualClock;

  beforeEach(() => {
    clock = new VirtualClock();
  });

  it('retries a failing handler with backoff, dead-letters it, and completes it once redriven', async () => {
    const app = await apps.boot({ imports: [DelayModule.forRoot({ clock, driver: { type: 'wheel', tickMs: 1 } })], providers: [FlakyMailer] });
    const delay = app.get(DelayService);
    const mailer = app.get(FlakyMailer);
    const start = clock.now();

    await delay.schedule(TOPIC, 'inv-1', { delay: '1m', payload: { to: 'a@example.com' } });
    await clock.advance('1m');
    expect(mailer.attempts).toHaveLength(1);
    // Between retries the action is still pending, on its next attempt.
    expect(await delay.get(TOPIC, 'inv-1')).toMatchObject({ attempt: 2, dueAt: new Date(start + 61_000), state: 'waiting' });

    await clock.advance('1h');
    // Backoff 1 s, 2 s, then capped at 3 s.
    expect(mailer.attempts.map((run) => [run.attempt, run.firedAt - start])).toEqual([
      [1, 60_000],
      [2, 61_000],
      [3, 63_000],
      [4, 66_000],
    ]);
    expect(mailer.attempts.every((run) => run.firedAt === run.dueAt)).toBe(true);
    expect(await delay.get(TOPIC, 'inv-1')).toBeNull();
    expect(await delay.count(TOPIC)).toBe(0);

    const dead = await delay.listDead(TOPIC);
    expect(dead.total).toBe(1);
    expect(dead.items).toEqual([
      expect.objectContaining({
        topic: TOPIC,
        key: 'inv-1',
        payload: { to: 'a@example.com' },
        attempts: 4,
        error: 'SMTP down (attempt 4)',
        diedAt: new Date(start + 66_000),
      }),
    ]);
    expect(await delay.countDead(TOPIC)).toBe(1);

    // The mail server is back: redrive runs it again from attempt 1, now.
    mailer.failing = false;
    const redriveAt = clock.now();
    expect(await delay.redrive(TOPIC, 'inv-1')).toBe(true);
    expect(await delay.countDead(TOPIC)).toBe(0);
    await clock.advance(0);
    expect(mailer.attempts.slice(4)).toEqual([{ key: 'inv-1', attempt: 1, firedAt: redriveAt, dueAt: redriveAt, payload: { to: 'a@example.com' } }]);
    expect(await delay.count(TOPIC)).toBe(0);
    expect(await delay.countDead(TOPIC)).toBe(0);
    expect(await delay.redrive(TOPIC, 'inv-1')).toBe(false);
  });

  it('waits the same time before each retry with a fixed backoff', async () => {
    const app = await apps.boot({ imports: [DelayModule.forRoot({ clock, driver: { type: 'wheel', tickMs: 1 } })], providers: [FixedBackoffHandler] });
    const start = clock.now();
    await app.get(DelayService).schedule('fixed.backoff', 'k', { delay: 0 });
    await clock.advance('1h');
    expect(app.get(FixedBackoffHandler).firedAt.map((at) => at - start)).toEqual([0, 5_000, 10_000]);
    expect(await app.get(DelayService).countDead('fixed.backoff')).toBe(1);
  });

  it('takes attempts and backoff from the module defaults when the handler sets none', async () => {
    @Injectable()
    class Plain {
      readonly firedAt: number[] = [];
      @OnDelayExpired('plain')
      run({ firedAt }: DelayContext): void {
        this.firedAt.push(firedAt.getTime());
        throw new Error('nope');
      }
    }
    const app = await apps.boot({
      imports: [DelayModule.forRoot({ clock, driver: { type: 'wheel', tickMs: 1 }, defaults: { attempts: 2, backoff: '7s' } })],
      providers: [Plain],
    });
    const start = clock.now();
    await app.get(DelayService).schedule('plain', 'k', { delay: '1s' });
    await clock.advance('1h');
    expect(app.get(Plain).firedAt.map((at) => at - start)).toEqual([1_000, 8_000]);
    expect(await app.get(DelayService).countDead('plain')).toBe(1);
  });

  it('stops retrying an action that is cancelled between attempts', async () => {
    const app = await apps.boot({ imports: [DelayModule.forRoot({ clock, driver: { type: 'wheel', tickMs: 1 } })], providers: [FlakyMailer] });
    const delay = app.get(DelayService);
    await delay.schedule(TOPIC, 'inv-2', { delay: '1s' });
    await clock.advance('1s');
    expect(app.get(FlakyMailer).attempts).toHaveLength(1);
    expect(await delay.cancel(TOPIC, 'inv-2')).toBe(true);
    await clock.advance('1h');
    expect(app.get(FlakyMailer).attempts).toHaveLength(1);
    expect(await delay.countDead(TOPIC)).toBe(0);
  });
});
