import { randomUUID } from 'node:crypto';
import { ShopTestApp, startShop } from './shop-test-app';

interface ErrorBody {
  statusCode: number;
  error: string;
  message: string | string[];
}

describe('HTTP errors (e2e): 400 for bad input, 404 for unknown ids, 409 for illegal transitions', () => {
  let shop: ShopTestApp;

  beforeEach(async () => {
    shop = await startShop();
  });

  afterEach(async () => {
    await shop.app.close();
  });

  async function placeOrder(): Promise<string> {
    const { body } = await shop.http
      .post('/orders')
      .send({ buyerId: 'ann', lines: [{ sku: 'green-tea', quantity: 1 }] })
      .expect(201);
    return (body as { id: string }).id;
  }

  describe('400: a body or parameter the DTOs refuse, with a message naming the problem', () => {
    it.each([
      ['no lines', { buyerId: 'ann', lines: [] }, 'lines must contain at least 1 elements'],
      ['a zero quantity', { buyerId: 'ann', lines: [{ sku: 'green-tea', quantity: 0 }] }, 'lines.0.quantity must not be less than 1'],
      ['a fractional quantity', { buyerId: 'ann', lines: [{ sku: 'green-tea', quantity: 1.5 }] }, 'lines.0.quantity must be an integer number'],
      ['a missing buyer', { lines: [{ sku: 'green-tea', quantity: 1 }] }, 'buyerId must be 1 to 64 letters, digits, "_" or "-"'],
      ['an unknown field', { buyerId: 'ann', lines: [{ sku: 'green-tea', quantity: 1 }], totalCents: 1 }, 'property totalCents should not exist'],
      [
        'a repeated sku',
        {
          buyerId: 'ann',
          lines: [
            { sku: 'green-tea', quantity: 1 },
            { sku: 'green-tea', quantity: 2 },
          ],
        },
        'lines must not repeat a sku; raise its quantity instead',
      ],
    ])('refuses an order with %s', async (_case, body, message) => {
      const response = await shop.http.post('/orders').send(body).expect(400);
      expect(response.body as ErrorBody).toMatchObject({ statusCode: 400, error: 'Bad Request' });
      expect((response.body as ErrorBody).message).toContain(message);
      await shop.http.get('/orders').expect(200, []);
    });

    it('refuses a rating outside 1 to 5 and an order id that is not a UUID', async () => {
      const id = await placeOrder();
      const { body } = await shop.http.post(`/orders/${id}/rate`).send({ stars: 6 }).expect(400);
      expect((body as ErrorBody).message).toEqual(['stars must not be greater than 5']);
      const { body: badId } = await shop.http.get('/orders/not-a-uuid').expect(400);
      expect((badId as ErrorBody).message).toEqual(['order id must be a UUID, as returned by POST /orders']);
    });
  });

  describe('404: ids that name nothing', () => {
    it('answers 404 for an unknown order id, on reads and on transitions', async () => {
      const id = randomUUID();
      const { body } = await shop.http.get(`/orders/${id}`).expect(404);
      expect(body).toEqual({ statusCode: 404, error: 'Not Found', message: `Order "${id}" not found` });
      await shop.http.post(`/orders/${id}/pay`).expect(404);
    });

    it('answers 404 for an unknown product, merchant or user', async () => {
      const { body } = await shop.http
        .post('/orders')
        .send({ buyerId: 'ann', lines: [{ sku: 'no-such-thing', quantity: 1 }] })
        .expect(404);
      expect((body as ErrorBody).message).toBe('Product "no-such-thing" not found');
      await shop.http.get('/products/no-such-thing').expect(404);
      await shop.http.put('/merchants/nobody/webhook').set('authorization', 'Bearer anything').send({ url: 'https://example.com/x' }).expect(404);
      await shop.http.get('/presence/nobody').expect(404);
    });
  });

  describe('409: a legal request the order state forbids', () => {
    it('refuses to pay an order cancelled for non-payment', async () => {
      const id = await placeOrder();
      await shop.clock.advance('30m');

      const { body } = await shop.http.post(`/orders/${id}/pay`).expect(409);
      expect(body).toEqual({
        statusCode: 409,
        error: 'Conflict',
        message: `Order "${id}" is cancelled; it cannot be paid (only an order that is created can)`,
      });
    });

    it('refuses to rate an order that was not delivered', async () => {
      const id = await placeOrder();
      await shop.http.post(`/orders/${id}/pay`).expect(200);

      const { body } = await shop.http.post(`/orders/${id}/rate`).send({ stars: 4 }).expect(409);
      expect((body as ErrorBody).message).toBe(`Order "${id}" is paid; it cannot be rated (only an order that is delivered can)`);
    });

    it('refuses to ship an unpaid order, and to pay twice', async () => {
      const id = await placeOrder();
      await shop.http.post(`/orders/${id}/ship`).expect(409);
      await shop.http.post(`/orders/${id}/pay`).expect(200);
      await shop.http.post(`/orders/${id}/pay`).expect(409);
      await shop.http.get(`/orders/${id}`).expect(200).expect(({ body }) => expect((body as { status: string }).status).toBe('paid'));
    });

    it('refuses an order for more than the stock, and takes none of it', async () => {
      const { body } = await shop.http
        .post('/orders')
        .send({
          buyerId: 'ann',
          lines: [
            { sku: 'green-tea', quantity: 1 },
            { sku: 'teapot', quantity: 4 },
          ],
        })
        .expect(409);
      expect((body as ErrorBody).message).toBe('Not enough stock of "teapot": 4 requested, 3 available');
      await shop.http.get('/products/green-tea').expect(200).expect(({ body: product }) => expect((product as { stock: number }).stock).toBe(20));
    });
  });
});
