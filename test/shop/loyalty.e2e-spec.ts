import { LoyaltyAccount } from '../../apps/shop/src/loyalty/loyalty-credit';
import { Order } from '../../apps/shop/src/orders/order';
import { ORDER_AUTO_RATE } from '../../apps/shop/src/orders/order-topics';
import { actionAttempt, injectCompletionFault } from './completion-faults';
import { dueTime, SHOP_DRIVERS, ShopUnderTest, sleep, useShopFixture } from './shop-drivers';

type Line = { sku: string; quantity: number };

/** Placed, paid, shipped and delivered: its `order.auto-rate` action is armed. */
async function deliveredOrder(shop: ShopUnderTest, buyerId: string, lines: Line[] = [{ sku: 'green-tea', quantity: 2 }]): Promise<Order> {
  const { body: placed } = (await shop.http.post('/orders').send({ buyerId, lines }).expect(201)) as { body: Order };
  await shop.time.stillBefore(dueTime(placed.paymentDueAt, 'paymentDueAt'), () => shop.http.post(`/orders/${placed.id}/pay`).expect(200));
  await shop.http.post(`/orders/${placed.id}/ship`).expect(200);
  const { body } = await shop.http.post(`/orders/${placed.id}/deliver`).expect(200);
  return body as Order;
}

async function orderById(shop: ShopUnderTest, id: string): Promise<Order> {
  const { body } = await shop.http.get(`/orders/${id}`).expect(200);
  return body as Order;
}

async function loyaltyOf(shop: ShopUnderTest, buyerId: string): Promise<LoyaltyAccount> {
  const { body } = await shop.http.get(`/buyers/${buyerId}/loyalty`).expect(200);
  return body as LoyaltyAccount;
}

describe.each(SHOP_DRIVERS)('Loyalty (e2e) on the %s driver: an auto-rated order credits its buyer', (driver) => {
  const fixture = useShopFixture(driver);

  it('credits one point per whole 100 cents, once, and nothing for an order its buyer rated', async () => {
    const shop = await fixture.start();
    // 2 x 650 cents: 13 points.
    const auto = await deliveredOrder(shop, 'ann');
    const byBuyer = await deliveredOrder(shop, 'bob', [{ sku: 'black-tea', quantity: 1 }]);
    await shop.time.stillBefore(dueTime(byBuyer.autoRateAt, 'autoRateAt'), () => shop.http.post(`/orders/${byBuyer.id}/rate`).send({ stars: 4 }).expect(200));

    const rated = await shop.time.at(dueTime(auto.autoRateAt, 'autoRateAt'), () => orderById(shop, auto.id), (order) => order.status === 'rated');
    expect(rated).toMatchObject({ status: 'rated', rating: { stars: 5, by: 'auto' } });
    // Long enough for a repeated run, had there been one.
    await shop.time.pass(2 * shop.config.autoRateAfterMs);
    expect(await loyaltyOf(shop, 'ann')).toEqual({
      buyerId: 'ann',
      balance: 13,
      credits: [{ buyerId: 'ann', orderId: auto.id, points: 13, reason: 'order.auto-rated', creditedAt: rated.rating?.at }],
    });
    expect(await loyaltyOf(shop, 'bob')).toEqual({ buyerId: 'bob', balance: 0, credits: [] });
  });
});

describe('Loyalty (e2e) on the postgres driver: the auto-rating, the credit and the completion are one commit', () => {
  const fixture = useShopFixture('postgres');

  it("a completion that fails after the handler's writes rolls them back; the retry rates and credits once", async () => {
    const shop = await fixture.start();
    await injectCompletionFault(shop.databaseUrl, ORDER_AUTO_RATE, { kind: 'raise' });
    const delivered = await deliveredOrder(shop, 'cleo');

    // Attempt 1 rated the order, wrote the ledger row, collected the webhook event, then its completion failed:
    // the retry, recorded on its own, is attempt 2 (due after the 1 s backoff).
    const deadline = Date.parse(dueTime(delivered.autoRateAt, 'autoRateAt')) + 5_000;
    while ((await actionAttempt(shop.databaseUrl, ORDER_AUTO_RATE, delivered.id)) !== 2) {
      if (Date.now() > deadline) throw new Error('attempt 1 of the auto-rating did not fail and get retried');
      await sleep(20);
    }
    const failedAt = Date.now();
    // Nothing of attempt 1 committed: had its writes committed apart from the completion (the wheel and Redis
    // handlers' way), the order would be rated here and attempt 2 would find it so and do nothing.
    expect(await orderById(shop, delivered.id)).toMatchObject({ status: 'delivered' });
    expect(await loyaltyOf(shop, 'cleo')).toMatchObject({ balance: 0, credits: [] });

    const rated = await shop.time.at(failedAt + 3_000, () => orderById(shop, delivered.id), (order) => order.status === 'rated');
    expect(rated).toMatchObject({ status: 'rated', rating: { stars: 5, by: 'auto' } });
    // Rated by attempt 2, after attempt 1 failed.
    expect(Date.parse(rated.rating?.at ?? '')).toBeGreaterThan(failedAt);
    expect(await actionAttempt(shop.databaseUrl, ORDER_AUTO_RATE, delivered.id)).toBeUndefined();
    await sleep(1_500);
    const account = await loyaltyOf(shop, 'cleo');
    expect(account).toMatchObject({ balance: 13, credits: [{ orderId: delivered.id, points: 13, creditedAt: rated.rating?.at }] });
    expect(account.credits).toHaveLength(1);
  });
});
