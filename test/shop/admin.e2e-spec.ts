import { ShopTestApp, startShop } from './shop-test-app';

describe('Admin (e2e): pending delayed actions per topic', () => {
  let shop: ShopTestApp;

  beforeEach(async () => {
    shop = await startShop();
  });

  afterEach(async () => {
    await shop.app.close();
  });

  it('counts pending and dead actions per topic and lists a topic earliest first', async () => {
    const ids: string[] = [];
    for (const buyerId of ['ann', 'bob']) {
      const { body } = await shop.http
        .post('/orders')
        .send({ buyerId, lines: [{ sku: 'black-tea', quantity: 1 }] })
        .expect(201);
      ids.push((body as { id: string }).id);
      await shop.clock.advance('1m');
    }
    await shop.http.post('/presence/ann/heartbeat').expect(200);

    const { body: summary } = await shop.http.get('/admin/delays').expect(200);
    expect(summary).toEqual([
      { topic: 'order.unpaid', pending: 2, dead: 0 },
      { topic: 'order.auto-rate', pending: 0, dead: 0 },
      { topic: 'user.offline', pending: 1, dead: 0 },
      { topic: 'merchant.webhook', pending: 0, dead: 0 },
    ]);

    const { body: page } = await shop.http.get('/admin/delays/order.unpaid?limit=1').expect(200);
    expect(page).toMatchObject({ total: 2, offset: 0, limit: 1, items: [{ topic: 'order.unpaid', key: ids[0], state: 'waiting', attempt: 1 }] });
    const { body: next } = await shop.http.get('/admin/delays/order.unpaid?offset=1&limit=1').expect(200);
    expect(next).toMatchObject({ total: 2, items: [{ key: ids[1] }] });

    await shop.http.get('/admin/delays/order.unpaid/dead').expect(200, { items: [], total: 0, offset: 0, limit: 100 });
  });

  it('answers 404 when re-driving an action that is not dead, and 400 for a bad page', async () => {
    await shop.http.post('/admin/delays/order.unpaid/dead/nothing/redrive').expect(404);
    await shop.http.post('/admin/delays/order.unpaid/dead/redrive').expect(200, { topic: 'order.unpaid', redriven: 0 });
    const { body } = await shop.http.get('/admin/delays/order.unpaid?limit=0').expect(400);
    expect((body as { message: string[] }).message).toEqual(['limit must not be less than 1']);
  });
});
