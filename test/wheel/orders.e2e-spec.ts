import { Injectable } from '@nestjs/common';
import { DelayContext, DelayModule, DelayService, OnDelayExpired, VirtualClock } from 'nestjs-delay';
import { useApps } from './support/apps';

type OrderStatus = 'unpaid' | 'paid' | 'cancelled';

/** Cancel an order still unpaid 30 minutes after checkout. */
@Injectable()
class Orders {
  readonly status = new Map<string, OrderStatus>();
  readonly cancelledByTimer: string[] = [];

  constructor(private readonly delay: DelayService) {}

  async checkout(id: string): Promise<void> {
    this.status.set(id, 'unpaid');
    await this.delay.schedule('order.unpaid', id, { delay: '30m' });
  }

  async pay(id: string): Promise<boolean> {
    this.status.set(id, 'paid');
    return this.delay.cancel('order.unpaid', id);
  }

  @OnDelayExpired('order.unpaid')
  cancelUnpaid({ key }: DelayContext): void {
    this.cancelledByTimer.push(key);
    this.status.set(key, 'cancelled');
  }
}

describe('unpaid order timeout (wheel driver)', () => {
  const apps = useApps();

  it("cancels a paid order's timer: it never fires, while the unpaid one does", async () => {
    const clock = new VirtualClock();
    const app = await apps.boot({ imports: [DelayModule.forRoot({ clock })], providers: [Orders] });
    const orders = app.get(Orders);
    const delay = app.get(DelayService);

    await orders.checkout('paid-1');
    await orders.checkout('unpaid-1');
    expect(await delay.count('order.unpaid')).toBe(2);

    await clock.advance('10m');
    expect(await orders.pay('paid-1')).toBe(true);
    expect(await delay.get('order.unpaid', 'paid-1')).toBeNull();
    expect(await delay.count('order.unpaid')).toBe(1);

    await clock.advance('7d');
    expect(orders.cancelledByTimer).toEqual(['unpaid-1']);
    expect(orders.status.get('paid-1')).toBe('paid');
    expect(orders.status.get('unpaid-1')).toBe('cancelled');
    expect(await delay.count('order.unpaid')).toBe(0);
  });

  it('reports false when there is nothing left to cancel', async () => {
    const clock = new VirtualClock();
    const app = await apps.boot({ imports: [DelayModule.forRoot({ clock })], providers: [Orders] });
    const orders = app.get(Orders);
    await orders.checkout('late-payer');
    await clock.advance('30m');
    expect(orders.cancelledByTimer).toEqual(['late-payer']);
    // Paying after the timer fired finds nothing to cancel.
    expect(await orders.pay('late-payer')).toBe(false);
    expect(await app.get(DelayService).cancel('order.unpaid', 'never-existed')).toBe(false);
  });
});
