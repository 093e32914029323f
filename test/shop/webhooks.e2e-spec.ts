import { createServer } from 'node:net';
import { SHOP_ENV_DEFAULTS } from '../../apps/shop/src/config/parse-shop-env';
import { WebhookDelivery } from '../../apps/shop/src/merchants/webhook-delivery';
import { Order } from '../../apps/shop/src/orders/order';
import { ms, SHOP_DRIVERS, ShopUnderTest, timeoutsOf, useShopFixture } from './shop-drivers';
import { ADMIN_API, TEST_ADMIN_TOKEN } from './shop-test-app';

interface ReceivedBatch {
  batchId: string;
  merchantId: string;
  events: Array<{ type: string; orderId: string }>;
  duplicate: boolean;
}

interface Page<T> {
  total: number;
  items: T[];
}

/** WebhookBatchHandler's backoff: a failed POST is tried again after 1 s, then 2 s. */
const RETRY_DELAYS_MS = [1_000, 2_000];

/** A port nothing listens on: taken from the OS, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe.each(SHOP_DRIVERS)('Merchant webhooks (e2e) on the %s driver: events within a window reach the receiver as one batch', (driver) => {
  const fixture = useShopFixture(driver);
  const { WEBHOOK_WINDOW } = timeoutsOf(driver);
  let shop: ShopUnderTest;

  beforeEach(async () => {
    // A real port: the webhook handler reaches the receiver over HTTP, as it would another server.
    // The order's own timeouts stay far longer than the window, as in production (and as on the wheel):
    // otherwise an order.cancelled or order.rated would join the batches under test.
    // The receiver is the shop itself, on 127.0.0.1: WEBHOOK_ALLOWED_NETWORKS lets webhooks reach it.
    shop = await fixture.start({
      listen: true,
      env: {
        UNPAID_TIMEOUT: SHOP_ENV_DEFAULTS.UNPAID_TIMEOUT,
        AUTO_RATE_AFTER: SHOP_ENV_DEFAULTS.AUTO_RATE_AFTER,
        ADMIN_TOKEN: TEST_ADMIN_TOKEN,
        WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32',
      },
    });
  });

  async function merchantAuth(merchantId: string): Promise<{ authorization: string }> {
    const { body } = await shop.http.post(`/api/admin/merchants/${merchantId}/token`).set(ADMIN_API).expect(201);
    return { authorization: `Bearer ${(body as { token: string }).token}` };
  }

  async function subscribe(merchantId: string, url = `${shop.baseUrl}/webhook-receiver/${merchantId}`): Promise<void> {
    await shop.http.put(`/merchants/${merchantId}/webhook`).set(await merchantAuth(merchantId)).send({ url }).expect(200);
  }

  async function received(merchantId: string): Promise<ReceivedBatch[]> {
    const { body } = await shop.http.get(`/webhook-receiver/${merchantId}`).expect(200);
    return body as ReceivedBatch[];
  }

  async function deliveries(merchantId: string): Promise<WebhookDelivery[]> {
    const { body } = await shop.http.get(`/merchants/${merchantId}/webhook/deliveries`).set(await merchantAuth(merchantId)).expect(200);
    return body as WebhookDelivery[];
  }

  async function placeOrder(): Promise<Order> {
    const { body } = await shop.http
      .post('/orders')
      .send({
        buyerId: 'ann',
        lines: [
          { sku: 'green-tea', quantity: 1 },
          { sku: 'blue-mug', quantity: 1 },
        ],
      })
      .expect(201);
    return body as Order;
  }

  /** When the merchant's open batch is due, as the admin API lists it. */
  async function batchDueAt(merchantId: string): Promise<string> {
    const { body } = await shop.http.get('/api/admin/delays/merchant.webhook').set(ADMIN_API).expect(200);
    const batch = (body as Page<{ key: string; dueAt: string }>).items.find((item) => item.key === merchantId);
    if (!batch) throw new Error(`No open webhook batch for "${merchantId}" in ${JSON.stringify(body)}`);
    return batch.dueAt;
  }

  it(`posts the events of one WEBHOOK_WINDOW (${WEBHOOK_WINDOW}) as one batch, in arrival order, to subscribed merchants only`, async () => {
    await subscribe('leafy');
    const order = await placeOrder();
    const dueAt = await batchDueAt('leafy');
    shop.time.expectDelay(order.createdAt, dueAt, shop.config.webhookWindowMs);
    // Two more events, a third and two thirds of the way through the window.
    await shop.time.pass(shop.config.webhookWindowMs / 3);
    await shop.time.stillBefore(dueAt, () => shop.http.post(`/orders/${order.id}/pay`).expect(200));
    await shop.time.pass(shop.config.webhookWindowMs / 3);
    await shop.time.stillBefore(dueAt, () => shop.http.post(`/orders/${order.id}/ship`).expect(200));

    expect(await shop.time.justBefore(dueAt, () => received('leafy'))).toEqual([]);

    const [batch, ...others] = await shop.time.at(dueAt, () => received('leafy'), (batches) => batches.length > 0);
    expect(others).toEqual([]);
    expect(batch).toMatchObject({ merchantId: 'leafy', duplicate: false });
    expect(batch.events.map((event) => [event.type, event.orderId])).toEqual([
      ['order.created', order.id],
      ['order.paid', order.id],
      ['order.shipped', order.id],
    ]);
    // The mug's merchant has no subscription: nothing is collected or sent for it.
    expect(await received('potters')).toEqual([]);

    // The next event opens a new window, and so a new batch.
    await shop.http.post(`/orders/${order.id}/deliver`).expect(200);
    const nextDueAt = await batchDueAt('leafy');
    // The receiver has a batch before its sender records the delivery: wait for the record.
    const attempts = await shop.time.at(nextDueAt, () => deliveries('leafy'), (records) => records.length === 2);
    const batches = await received('leafy');
    expect(batches.map((each) => each.events.map((event) => event.type))).toEqual([['order.created', 'order.paid', 'order.shipped'], ['order.delivered']]);
    expect(attempts).toMatchObject([
      { batchId: batches[0].batchId, eventCount: 3, attempt: 1, outcome: 'delivered', httpStatus: 204 },
      { batchId: batches[1].batchId, eventCount: 1, attempt: 1, outcome: 'delivered', httpStatus: 204 },
    ]);
    // Each batch went out when its window closed (its record is written once the receiver has answered).
    shop.time.expectOnTime(attempts[0].at, dueAt);
    shop.time.expectOnTime(attempts[1].at, nextDueAt);
  });

  it('retries a failing URL, then keeps the batch in the dead set until an admin re-drives it', async () => {
    await subscribe('leafy', `http://127.0.0.1:${await closedPort()}/webhook-receiver/leafy`);
    const order = await placeOrder();

    // The window, then the two retries: three attempts in all, the last one 3 s after the window closed.
    const lastAttemptAt = ms(await batchDueAt('leafy')) + RETRY_DELAYS_MS[0] + RETRY_DELAYS_MS[1];
    const readDead = async (): Promise<Page<{ id: string; key: string; attempts: number; error: string }>> => {
      const { body } = await shop.http.get('/api/admin/delays/merchant.webhook/dead').set(ADMIN_API).expect(200);
      return body as Page<{ id: string; key: string; attempts: number; error: string }>;
    };
    // Wait for the item itself: a page's list and its total are read side by side, so the total may count the batch a moment before the list shows it.
    const dead = await shop.time.at(lastAttemptAt, readDead, (page) => page.items.length > 0);
    expect(dead).toMatchObject({ total: 1, items: [{ key: 'leafy', attempts: 3, items: [{ type: 'order.created', orderId: order.id }] }] });
    expect(dead.items[0].error).toContain('ECONNREFUSED');
    expect((await deliveries('leafy')).map(({ outcome, attempt }) => [outcome, attempt])).toEqual([
      ['failed', 1],
      ['failed', 2],
      ['failed', 3],
    ]);

    await subscribe('leafy');
    await shop.http.post(`/api/admin/delays/merchant.webhook/dead/${encodeURIComponent(dead.items[0].id)}/redrive`).set(ADMIN_API).expect(200, { topic: 'merchant.webhook', redriven: 1 });

    // A re-driven action is due at once.
    const batches = await shop.time.at(shop.time.now() + 1_000, () => received('leafy'), (found) => found.length > 0);
    expect(batches).toHaveLength(1);
    expect(batches[0].events).toMatchObject([{ type: 'order.created', orderId: order.id }]);
    await shop.http.get('/api/admin/delays/merchant.webhook/dead').set(ADMIN_API).expect(200).expect(({ body }) => expect(body).toMatchObject({ total: 0 }));
  });
});
