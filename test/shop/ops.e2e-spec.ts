import { SHOP_ENV_DEFAULTS } from '../../apps/shop/src/config/parse-shop-env';
import { SHOP_DRIVERS, ShopUnderTest, useShopFixture } from './shop-drivers';

const TOKEN = 'correct-horse-battery';
const basic = (password: string): string => `Basic ${Buffer.from(`ops:${password}`).toString('base64')}`;
const bearer = { authorization: `Bearer ${TOKEN}` };

describe.each(SHOP_DRIVERS)('Operations (e2e) on the %s driver: /health, /metrics and the admin page', (driver) => {
  const fixture = useShopFixture(driver);
  let shop: ShopUnderTest;

  async function placeOrder(): Promise<string> {
    const { body } = await shop.http
      .post('/orders')
      .send({ buyerId: 'ann', lines: [{ sku: 'black-tea', quantity: 1 }] })
      .expect(201);
    return (body as { id: string }).id;
  }

  describe('with ADMIN_TOKEN', () => {
    beforeEach(async () => {
      shop = await fixture.start({ env: { ...SHOP_ENV_DEFAULTS, ADMIN_TOKEN: TOKEN } });
    });

    it('is healthy, with its database, and names its driver and topics', async () => {
      const { body } = await shop.http.get('/health').expect(200);
      expect(body.info.delay).toMatchObject({ status: 'up', driver, topics: { 'order.unpaid': { consuming: true, consumerAlive: true } } });
      expect(body.info.database).toMatchObject({ status: 'up' });
    });

    it('exposes the delay metrics for Prometheus', async () => {
      await placeOrder();
      await placeOrder();
      const { text, headers } = await shop.http.get('/metrics').expect(200);
      expect(headers['content-type']).toContain('text/plain');
      expect(text).toMatch(/^delay_actions_scheduled_total\{delay_topic="order\.unpaid"[^}]*\} 2$/m);
      // Gauges read from the store when Prometheus scrapes.
      expect(text).toMatch(/^delay_store_waiting\{delay_topic="order\.unpaid"[^}]*\} 2$/m);
    });

    it('serves the admin page; reading and writing need the token as the Basic password', async () => {
      const id = await placeOrder();
      const challenged = await shop.http.get('/admin/delays/topics/order.unpaid').expect(401);
      expect(challenged.headers['www-authenticate']).toContain('Basic realm="shop delay admin"');
      expect(challenged.text).not.toContain(id);
      await shop.http.get('/admin/delays').set('authorization', basic('guess')).expect(403);
      const page = await shop.http.get('/admin/delays/topics/order.unpaid').set('authorization', basic(TOKEN)).expect(200);
      expect(page.text).toContain(`<code>${id}</code>`);

      const asked = await shop.http.post('/admin/delays/topics/order.unpaid/cancel').type('form').send({ key: id }).expect(401);
      expect(asked.headers['www-authenticate']).toContain('Basic realm="shop delay admin"');
      await shop.http.post('/admin/delays/topics/order.unpaid/cancel').set('authorization', basic('guess')).type('form').send({ key: id }).expect(403);
      await shop.http.get(`/api/admin/delays/order.unpaid`).set(bearer).expect(200).expect(({ body }) => expect(body.total).toBe(1));

      await shop.http.post('/admin/delays/topics/order.unpaid/cancel').set('authorization', basic(TOKEN)).set('sec-fetch-site', 'same-origin').type('form').send({ key: id }).expect(303);
      await shop.http.get(`/api/admin/delays/order.unpaid`).set(bearer).expect(200).expect(({ body }) => expect(body.total).toBe(0));
    });

    it('refuses a write with the right password from another site or with Origin: null', async () => {
      await placeOrder();
      await shop.http.post('/admin/delays/topics/order.unpaid/pause').set('authorization', basic(TOKEN)).set('sec-fetch-site', 'same-origin').type('form').send({}).expect(303);
      for (const headers of [{ origin: 'null' }, { origin: 'https://evil.example' }, { 'sec-fetch-site': 'cross-site' }, {}]) {
        const refused = await shop.http.post('/admin/delays/topics/order.unpaid/resume').set('authorization', basic(TOKEN)).set(headers).type('form').send({}).expect(403);
        expect(refused.text).toContain('is refused');
      }
      const { body } = await shop.http.get('/api/admin/delays').set(bearer).expect(200);
      // Besides the merchants' daily digest schedules, which nothing paused.
      expect(body).toEqual([expect.objectContaining({ topic: 'merchant.digest', paused: false }), expect.objectContaining({ topic: 'order.unpaid', paused: true })]);
    });
  });

  describe('without ADMIN_TOKEN', () => {
    beforeEach(async () => {
      shop = await fixture.start({ env: SHOP_ENV_DEFAULTS });
    });

    it('closes the admin page, reads and writes, and the JSON admin', async () => {
      const id = await placeOrder();
      const unread = await shop.http.get('/admin/delays').expect(403);
      expect(unread.text).toContain('start the shop with ADMIN_TOKEN set');
      const refused = await shop.http.post('/admin/delays/topics/order.unpaid/cancel').set('authorization', basic('anything')).set('sec-fetch-site', 'same-origin').type('form').send({ key: id }).expect(403);
      expect(refused.text).toContain('start the shop with ADMIN_TOKEN set');
      const closed = await shop.http.get(`/api/admin/delays/order.unpaid`).set(bearer).expect(403);
      expect(closed.body).toMatchObject({ message: expect.stringContaining('start the shop with ADMIN_TOKEN set') });
      const page = await shop.http.get('/admin/delays/topics/order.unpaid').set('authorization', basic('anything')).expect(403);
      expect(page.text).not.toContain(id);
    });
  });
});
