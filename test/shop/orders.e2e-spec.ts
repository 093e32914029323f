import { ShopTestApp, startShop } from './shop-test-app';

describe('Orders (e2e): the unpaid-order cancel and the 48-hour auto-rating', () => {
  let shop: ShopTestApp;

  beforeEach(async () => {
    shop = await startShop();
  });

  afterEach(async () => {
    await shop.app.close();
  });

  async function stockOf(sku: string): Promise<number> {
    const { body } = await shop.http.get(`/products/${sku}`).expect(200);
    return (body as { stock: number }).stock;
  }

  async function placeOrder(lines: Array<{ sku: string; quantity: number }> = [{ sku: 'green-tea', quantity: 2 }]): Promise<string> {
    const { body } = await shop.http.post('/orders').send({ buyerId: 'ann', lines }).expect(201);
    return (body as { id: string }).id;
  }

  async function statusOf(id: string): Promise<Record<string, unknown>> {
    const { body } = await shop.http.get(`/orders/${id}`).expect(200);
    return body as Record<string, unknown>;
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
    const { createdAt, paymentDueAt } = body as { createdAt: string; paymentDueAt: string };
    expect(Date.parse(paymentDueAt) - Date.parse(createdAt)).toBe(30 * 60_000);
    expect(await stockOf('green-tea')).toBe(18);
    await shop.http.get('/orders?buyerId=ann&status=created').expect(200, [body]);
    await shop.http.get('/orders?buyerId=bob').expect(200, []);
  });

  it('cancels an order still unpaid after 30 minutes and puts its stock back', async () => {
    const id = await placeOrder([{ sku: 'green-tea', quantity: 2 }]);
    expect(await stockOf('green-tea')).toBe(18);

    await shop.clock.advance('29m59s');
    expect(await statusOf(id)).toMatchObject({ status: 'created' });

    await shop.clock.advance('1s');
    expect(await statusOf(id)).toMatchObject({ status: 'cancelled', cancelReason: 'unpaid' });
    expect(await stockOf('green-tea')).toBe(20);
  });

  it('never cancels an order paid in time', async () => {
    const id = await placeOrder();
    await shop.clock.advance('29m');
    await shop.http.post(`/orders/${id}/pay`).expect(200);

    await shop.clock.advance('2h');
    expect(await statusOf(id)).toMatchObject({ status: 'paid' });
    expect(await stockOf('green-tea')).toBe(18);
    const { body } = await shop.http.get('/admin/delays/order.unpaid').expect(200);
    expect(body).toMatchObject({ total: 0, items: [] });
  });

  it('rates 5 stars a delivered order its buyer has not rated within 48 hours', async () => {
    const id = await placeOrder();
    await shop.http.post(`/orders/${id}/pay`).expect(200);
    await shop.http.post(`/orders/${id}/ship`).expect(200);
    const { body: delivered } = await shop.http.post(`/orders/${id}/deliver`).expect(200);
    const { deliveredAt, autoRateAt } = delivered as { deliveredAt: string; autoRateAt: string };
    expect(Date.parse(autoRateAt) - Date.parse(deliveredAt)).toBe(48 * 3_600_000);

    await shop.clock.advance('47h59m');
    expect(await statusOf(id)).toMatchObject({ status: 'delivered' });

    await shop.clock.advance('1m');
    expect(await statusOf(id)).toMatchObject({ status: 'rated', rating: { stars: 5, by: 'auto' } });
  });

  it("keeps the buyer's own rating when it comes within 48 hours", async () => {
    const id = await placeOrder();
    await shop.http.post(`/orders/${id}/pay`).expect(200);
    await shop.http.post(`/orders/${id}/ship`).expect(200);
    await shop.http.post(`/orders/${id}/deliver`).expect(200);

    await shop.clock.advance('47h');
    await shop.http.post(`/orders/${id}/rate`).send({ stars: 2 }).expect(200);

    await shop.clock.advance('7d');
    expect(await statusOf(id)).toMatchObject({ status: 'rated', rating: { stars: 2, by: 'buyer' } });
  });
});
