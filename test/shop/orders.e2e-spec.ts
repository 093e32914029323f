import { Order } from '../../apps/shop/src/orders/order';
import { AGAIN_WHEN_LATE_TIMEOUT_MS, againWhenLate, dueTime, SHOP_DRIVERS, ShopUnderTest, timeoutsOf, useShopFixture } from './shop-drivers';
import { ADMIN_API, TEST_ADMIN_TOKEN } from './shop-test-app';

type Line = { sku: string; quantity: number };

describe.each(SHOP_DRIVERS)('Orders (e2e) on the %s driver: the unpaid-order cancel and the auto-rating', (driver) => {
  const fixture = useShopFixture(driver);
  const { UNPAID_TIMEOUT, AUTO_RATE_AFTER } = timeoutsOf(driver);
  let shop: ShopUnderTest;

  beforeEach(async () => {
    shop = await fixture.start({ env: { ADMIN_TOKEN: TEST_ADMIN_TOKEN } });
  });

  async function stockOf(sku: string): Promise<number> {
    const { body } = await shop.http.get(`/products/${sku}`).expect(200);
    return (body as { stock: number }).stock;
  }

  async function placeOrder(lines: Line[] = [{ sku: 'green-tea', quantity: 2 }], buyerId = 'ann'): Promise<Order> {
    const { body } = await shop.http.post('/orders').send({ buyerId, lines }).expect(201);
    return body as Order;
  }

  async function orderById(id: string): Promise<Order> {
    const { body } = await shop.http.get(`/orders/${id}`).expect(200);
    return body as Order;
  }

  /** Placed, paid before its payment deadline, shipped and delivered. */
  async function deliveredOrder(lines?: Line[], buyerId?: string): Promise<Order> {
    const placed = await placeOrder(lines, buyerId);
    await shop.time.stillBefore(dueTime(placed.paymentDueAt, 'paymentDueAt'), () => shop.http.post(`/orders/${placed.id}/pay`).expect(200));
    await shop.http.post(`/orders/${placed.id}/ship`).expect(200);
    const { body } = await shop.http.post(`/orders/${placed.id}/deliver`).expect(200);
    return body as Order;
  }

  it('places an order with its lines, a total computed from the catalogue, and a payment deadline', async () => {
    const { body } = await shop.http
      .post('/orders')
      .send({
        buyerId: 'ann',
        lines: [
          { sku: 'green-tea', quantity: 2 },
          { sku: 'blue-mug', quantity: 1 },
        ],
      })
      .expect(201);

    expect(body).toMatchObject({
      buyerId: 'ann',
      status: 'created',
      totalCents: 2 * 650 + 1800,
      lines: [
        { sku: 'green-tea', quantity: 2, unitPriceCents: 650, merchantId: 'leafy' },
        { sku: 'blue-mug', quantity: 1, unitPriceCents: 1800, merchantId: 'potters' },
      ],
    });
    const order = body as Order;
    shop.time.expectDelay(order.createdAt, dueTime(order.paymentDueAt, 'paymentDueAt'), shop.config.unpaidTimeoutMs);
    await shop.time.stillBefore(dueTime(order.paymentDueAt, 'paymentDueAt'), async () => {
      expect(await stockOf('green-tea')).toBe(18);
      await shop.http.get('/orders?buyerId=ann&status=created').expect(200, [body]);
    });
    await shop.http.get('/orders?buyerId=bob').expect(200, []);
  });

  it(`cancels an order still unpaid after UNPAID_TIMEOUT (${UNPAID_TIMEOUT}) and puts its stock back`, async () => {
    const placed = await placeOrder([{ sku: 'green-tea', quantity: 2 }]);
    const dueAt = dueTime(placed.paymentDueAt, 'paymentDueAt');
    expect(await shop.time.stillBefore(dueAt, () => stockOf('green-tea'))).toBe(18);

    expect(await shop.time.justBefore(dueAt, () => orderById(placed.id))).toMatchObject({ status: 'created' });

    const cancelled = await shop.time.at(dueAt, () => orderById(placed.id), (order) => order.status !== 'created');
    expect(cancelled).toMatchObject({ status: 'cancelled', cancelReason: 'unpaid' });
    shop.time.expectOnTime(cancelled.cancelledAt, dueAt);
    expect(await stockOf('green-tea')).toBe(20);
  });

  it('never cancels an order paid in time', async () => {
    const paid = await placeOrder();
    // Placed at the same time and never paid: proves the wait below is long enough for the timeout to fire.
    const unpaid = await placeOrder([{ sku: 'black-tea', quantity: 1 }], 'bob');
    await shop.time.justBefore(dueTime(paid.paymentDueAt, 'paymentDueAt'), () => shop.http.post(`/orders/${paid.id}/pay`).expect(200));

    await shop.time.pass(4 * shop.config.unpaidTimeoutMs);
    expect(await orderById(paid.id)).toMatchObject({ status: 'paid' });
    expect(await stockOf('green-tea')).toBe(18);
    expect(await orderById(unpaid.id)).toMatchObject({ status: 'cancelled', cancelReason: 'unpaid' });
    expect(await stockOf('black-tea')).toBe(20);
    const { body } = await shop.http.get('/api/admin/delays/order.unpaid').set(ADMIN_API).expect(200);
    expect(body).toMatchObject({ total: 0, items: [] });
  });

  it(`rates 5 stars a delivered order its buyer has not rated within AUTO_RATE_AFTER (${AUTO_RATE_AFTER})`, () =>
    againWhenLate(async () => {
      const delivered = await deliveredOrder();
      const dueAt = dueTime(delivered.autoRateAt, 'autoRateAt');
      shop.time.expectDelay(dueTime(delivered.deliveredAt, 'deliveredAt'), dueAt, shop.config.autoRateAfterMs);

      expect(await shop.time.justBefore(dueAt, () => orderById(delivered.id))).toMatchObject({ status: 'delivered' });

      const rated = await shop.time.at(dueAt, () => orderById(delivered.id), (order) => order.status !== 'delivered');
      expect(rated).toMatchObject({ status: 'rated', rating: { stars: 5, by: 'auto' } });
      shop.time.expectOnTime(rated.rating?.at, dueAt);
    }), AGAIN_WHEN_LATE_TIMEOUT_MS);

  it(`keeps the buyer's own rating when it comes within AUTO_RATE_AFTER (${AUTO_RATE_AFTER})`, () =>
    againWhenLate(async () => {
      // Delivered first and never rated: proves the wait below is long enough for the auto-rating to fire.
      const unrated = await deliveredOrder([{ sku: 'black-tea', quantity: 1 }], 'bob');
      const delivered = await deliveredOrder();
      // The buyer's rating right after delivery: the one call that must come within AUTO_RATE_AFTER.
      await shop.time.justBefore(dueTime(delivered.autoRateAt, 'autoRateAt'), () => shop.http.post(`/orders/${delivered.id}/rate`).send({ stars: 2 }).expect(200));

      await shop.time.pass(3.5 * shop.config.autoRateAfterMs);
      expect(await orderById(delivered.id)).toMatchObject({ status: 'rated', rating: { stars: 2, by: 'buyer' } });
      expect(await orderById(unrated.id)).toMatchObject({ status: 'rated', rating: { stars: 5, by: 'auto' } });
    }), AGAIN_WHEN_LATE_TIMEOUT_MS);
});
