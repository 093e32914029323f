import { Injectable, Module } from '@nestjs/common';
import { DelayClock, DelayContext, DelayModule, DelayService, OnDelayExpired, WheelDriver, DELAY_DRIVER } from 'nestjs-delay';
import { DelayTestingModule, VirtualClock } from 'nestjs-delay/testing';
import { useApps } from './support/apps';

/** A delivered order the buyer has not rated within 48 h is rated 5 stars. */
@Injectable()
class Ratings {
  readonly stars = new Map<string, number>();

  constructor(private readonly delay: DelayService) {}

  async delivered(order: string): Promise<void> {
    await this.delay.schedule('order.auto-rate', order, { delay: '48h', payload: { stars: 5 } });
  }

  async rate(order: string, stars: number): Promise<void> {
    this.stars.set(order, stars);
    await this.delay.cancel('order.auto-rate', order);
  }

  @OnDelayExpired('order.auto-rate')
  autoRate({ key, payload }: DelayContext<{ stars: number }>): void {
    this.stars.set(key, payload?.stars ?? 0);
  }
}

/** An application module as a user writes it: DelayModule on the system clock. */
@Module({ imports: [DelayModule.forRoot({ driver: { type: 'wheel', tickMs: 50 } })], providers: [Ratings] })
class ShopModule {}

describe('testing helpers from nestjs-delay/testing', () => {
  const apps = useApps();

  it('DelayTestingModule.forRoot({ clock }) runs handlers on advance, to the millisecond', async () => {
    const clock = new VirtualClock();
    const app = await apps.boot({ imports: [DelayTestingModule.forRoot({ clock })], providers: [Ratings] });
    const ratings = app.get(Ratings);
    await ratings.delivered('rated-by-buyer');
    await ratings.delivered('silent-buyer');
    await clock.advance('1h');
    await ratings.rate('rated-by-buyer', 3);

    await clock.advance(48 * 3_600_000 - 3_600_000 - 1);
    expect(ratings.stars.has('silent-buyer')).toBe(false);
    await clock.advance(1);
    expect(ratings.stars.get('silent-buyer')).toBe(5);
    expect(ratings.stars.get('rated-by-buyer')).toBe(3);
    // The testing module is the wheel driver with a 1 ms tick.
    const driver = app.get<WheelDriver>(DELAY_DRIVER);
    expect(driver).toBeInstanceOf(WheelDriver);
    expect(driver.tickMs).toBe(1);
  });

  it('DelayTestingModule passes other module options through', async () => {
    const clock = new VirtualClock();
    const app = await apps.boot({ imports: [DelayTestingModule.forRoot({ clock, tickMs: 10, maxPayloadBytes: 8 })] });
    await expect(app.get(DelayService).schedule('t', 'k', { delay: 1, payload: 'more than eight bytes' })).rejects.toMatchObject({
      code: 'ERR_DELAY_PAYLOAD_TOO_LARGE',
    });
    expect(app.get<WheelDriver>(DELAY_DRIVER).tickMs).toBe(10);
  });

  it('.overrideProvider(DelayClock).useValue(clock) puts an existing app module on virtual time', async () => {
    const clock = new VirtualClock();
    const app = await apps.boot({ imports: [ShopModule] }, (builder) => builder.overrideProvider(DelayClock).useValue(clock));
    expect(app.get(DelayClock)).toBe(clock);
    const ratings = app.get(Ratings);
    await ratings.delivered('o-1');
    expect(await app.get(DelayService).get('order.auto-rate', 'o-1')).toMatchObject({ dueAt: new Date(clock.now() + 48 * 3_600_000) });

    await clock.advance('47h');
    expect(ratings.stars.has('o-1')).toBe(false);
    await clock.advance('1h');
    expect(ratings.stars.get('o-1')).toBe(5);
  });
});
