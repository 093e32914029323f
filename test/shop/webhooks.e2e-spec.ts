import { createServer } from 'node:net';
import { ShopTestApp, startShop } from './shop-test-app';

interface ReceivedBatch {
  batchId: string;
  merchantId: string;
  events: Array<{ type: string; orderId: string }>;
  duplicate: boolean;
}

/** A port nothing listens on: taken from the OS, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('Merchant webhooks (e2e): events within a window reach the receiver as one batch', () => {
  let shop: ShopTestApp;

  beforeEach(async () => {
    shop = await startShop({ listen: true });
  });

  afterEach(async () => {
    await shop.app.close();
  });

  async function subscribe(merchantId: string, url = `${shop.baseUrl}/webhook-receiver/${merchantId}`): Promise<void> {
    await shop.http.put(`/merchants/${merchantId}/webhook`).send({ url }).expect(200);
  }

  async function received(merchantId: string): Promise<ReceivedBatch[]> {
    const { body } = await shop.http.get(`/webhook-receiver/${merchantId}`).expect(200);
    return body as ReceivedBatch[];
  }

  async function placeOrder(): Promise<string> {
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
    return (body as { id: string }).id;
  }

  it('posts the events of one 3 s window as one batch, in arrival order, to subscribed merchants only', async () => {
    await subscribe('leafy');
    const id = await placeOrder();
    await shop.clock.advance('1s');
    await shop.http.post(`/orders/${id}/pay`).expect(200);
    await shop.clock.advance('1s');
    await shop.http.post(`/orders/${id}/ship`).expect(200);

    await shop.clock.advance('900ms');
    expect(await received('leafy')).toEqual([]);

    await shop.clock.advance('100ms');
    const [batch, ...others] = await received('leafy');
    expect(others).toEqual([]);
    expect(batch).toMatchObject({ merchantId: 'leafy', duplicate: false });
    expect(batch.events.map((event) => [event.type, event.orderId])).toEqual([
      ['order.created', id],
      ['order.paid', id],
      ['order.shipped', id],
    ]);
    // The mug's merchant has no subscription: nothing is collected or sent for it.
    expect(await received('potters')).toEqual([]);

    // The next event opens a new window, and so a new batch.
    await shop.http.post(`/orders/${id}/deliver`).expect(200);
    await shop.clock.advance('3s');
    const batches = await received('leafy');
    expect(batches.map((each) => each.events.map((event) => event.type))).toEqual([['order.created', 'order.paid', 'order.shipped'], ['order.delivered']]);

    const { body: deliveries } = await shop.http.get('/merchants/leafy/webhook/deliveries').expect(200);
    expect(deliveries).toMatchObject([
      { batchId: batches[0].batchId, eventCount: 3, attempt: 1, outcome: 'delivered', httpStatus: 204 },
      { batchId: batches[1].batchId, eventCount: 1, attempt: 1, outcome: 'delivered', httpStatus: 204 },
    ]);
  });

  it('retries a failing URL, then keeps the batch in the dead set until an admin re-drives it', async () => {
    await subscribe('leafy', `http://127.0.0.1:${await closedPort()}/webhook-receiver/leafy`);
    const id = await placeOrder();

    // The window (3 s), then retries after 1 s and 2 s: three attempts in all.
    await shop.clock.advance('10s');
    const { body: dead } = await shop.http.get('/admin/delays/merchant.webhook/dead').expect(200);
    expect(dead).toMatchObject({ total: 1, items: [{ key: 'leafy', attempts: 3, items: [{ type: 'order.created', orderId: id }] }] });
    expect((dead as { items: Array<{ error: string }> }).items[0].error).toContain('ECONNREFUSED');
    const deadId = (dead as { items: Array<{ id: string }> }).items[0].id;
    const { body: failures } = await shop.http.get('/merchants/leafy/webhook/deliveries').expect(200);
    expect((failures as Array<{ outcome: string; attempt: number }>).map(({ outcome, attempt }) => [outcome, attempt])).toEqual([
      ['failed', 1],
      ['failed', 2],
      ['failed', 3],
    ]);

    await subscribe('leafy');
    await shop.http.post(`/admin/delays/merchant.webhook/dead/${encodeURIComponent(deadId)}/redrive`).expect(200, { topic: 'merchant.webhook', redriven: 1 });
    await shop.clock.advance('1s');

    const batches = await received('leafy');
    expect(batches).toHaveLength(1);
    expect(batches[0].events).toMatchObject([{ type: 'order.created', orderId: id }]);
    await shop.http.get('/admin/delays/merchant.webhook/dead').expect(200).expect(({ body }) => expect(body).toMatchObject({ total: 0 }));
  });
});
