import IORedis from 'ioredis';
import { randomUUID } from 'node:crypto';
import { Order } from '../../apps/shop/src/orders/order';
import { dueTime, ms, ShopUnderTest, useShopFixture } from './shop-drivers';
import { freshShopDatabase } from './shop-database';
import { ADMIN_API, ShopEnv, TEST_ADMIN_TOKEN } from './shop-test-app';

// The promise of the Redis driver that the wheel cannot make: pending
// actions live in Redis, so they outlive the instance that scheduled them.
describe('Restart (e2e) on the redis driver: an unpaid order outlives the instance it was placed on', () => {
  const fixture = useShopFixture('redis');
  let redis: IORedis | undefined;

  afterEach(() => {
    redis?.disconnect();
    redis = undefined;
  });

  async function orderOf(shop: ShopUnderTest, id: string): Promise<Order> {
    const { body } = await shop.http.get(`/orders/${id}`).expect(200);
    return body as Order;
  }

  async function stockOf(shop: ShopUnderTest, sku: string): Promise<number> {
    const { body } = await shop.http.get(`/products/${sku}`).expect(200);
    return (body as { stock: number }).stock;
  }

  it('instance A takes the order and stops; instance B, started on the same Redis, cancels it on time and restores the stock', async () => {
    // Both instances use one PostgreSQL database for orders and stock, as a
    // real deployment does. Nothing else is shared: each app has its own
    // delay driver, Redis connections and timers.
    // Same Redis (the fixture's server), same key prefix: B sees what A scheduled.
    // Long enough for A to stop and B to boot before the deadline on a loaded machine (a second was seen too short).
    const env: ShopEnv = { UNPAID_TIMEOUT: '5s', ADMIN_TOKEN: TEST_ADMIN_TOKEN, DATABASE_URL: await freshShopDatabase() };
    const prefix = `shop-restart-${randomUUID()}`;

    const startedAt = Date.now();
    const a = await fixture.start({ env, prefix });
    const { body } = await a.http
      .post('/orders')
      .send({ buyerId: 'ann', lines: [{ sku: 'green-tea', quantity: 2 }] })
      .expect(201);
    const placed = body as Order;
    const dueAt = dueTime(placed.paymentDueAt, 'paymentDueAt');
    a.time.expectDelay(placed.createdAt, dueAt, 5_000);
    expect(await stockOf(a, 'green-tea')).toBe(18);

    await a.close();
    const closedAt = Date.now();

    // No instance runs now. The action waits in Redis, under the shop's REDIS_PREFIX, due at the payment deadline.
    redis = new IORedis(fixture.redisUrl(), { lazyConnect: true });
    await redis.connect();
    expect(await redis.zscore(`${prefix}:{order.unpaid}:due`, placed.id)).toBe(String(ms(dueAt)));

    // Real time is the same for every instance: A's clock serves to check that B is up, and the order still unpaid, before the deadline.
    const b = await a.time.stillBefore(dueAt, () => fixture.start({ env, prefix }));
    const bootedAt = Date.now();
    expect(await b.time.stillBefore(dueAt, () => orderOf(b, placed.id))).toMatchObject({ status: 'created' });
    expect(await stockOf(b, 'green-tea')).toBe(18);

    const cancelled = await b.time.at(dueAt, () => orderOf(b, placed.id), (order) => order.status !== 'created');
    expect(cancelled).toMatchObject({ status: 'cancelled', cancelReason: 'unpaid' });
    // Not before the deadline, and within a small margin after it.
    b.time.expectOnTime(cancelled.cancelledAt, dueAt);
    expect(await stockOf(b, 'green-tea')).toBe(20);
    // Done, so gone from Redis: nothing left for a later instance to run again.
    await b.http.get('/api/admin/delays/order.unpaid').set(ADMIN_API).expect(200).expect(({ body: page }) => expect(page).toMatchObject({ total: 0, items: [] }));

    if (process.env.SHOP_E2E_TIMINGS) {
      const at = (time: number): string => `${time - startedAt} ms`;
      process.stdout.write(
        `  [shop restart] A up and order placed: ${at(ms(placed.createdAt))}; A closed: ${at(closedAt)}; B up: ${at(bootedAt)}; ` +
          `due: ${at(ms(dueAt))}; cancelled by B: ${at(ms(cancelled.cancelledAt ?? NaN))}\n`,
      );
    }
  });
});
