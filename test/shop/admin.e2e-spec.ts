import { SHOP_ENV_DEFAULTS } from '../../apps/shop/src/config/parse-shop-env';
import { SHOP_DRIVERS, ShopUnderTest, useShopFixture } from './shop-drivers';
import { ADMIN_API, TEST_ADMIN_TOKEN } from './shop-test-app';

describe.each(SHOP_DRIVERS)('Admin (e2e) on the %s driver: pending delayed actions per topic', (driver) => {
  const fixture = useShopFixture(driver);
  let shop: ShopUnderTest;

  beforeEach(async () => {
    // The default timeouts on both drivers: what is listed must still be pending when the test reads it.
    shop = await fixture.start({ env: { ...SHOP_ENV_DEFAULTS, ADMIN_TOKEN: TEST_ADMIN_TOKEN } });
  });

  it('counts pending and dead actions per topic and lists a topic earliest first', async () => {
    const ids: string[] = [];
    for (const buyerId of ['ann', 'bob']) {
      const { body } = await shop.http
        .post('/orders')
        .send({ buyerId, lines: [{ sku: 'black-tea', quantity: 1 }] })
        .expect(201);
      ids.push((body as { id: string }).id);
      // So that the two orders' due times differ, and their order is that of their creation.
      await shop.time.pass(50);
    }
    await shop.http.post('/presence/ann/heartbeat').expect(200);

    const { body: summary } = await shop.http.get('/api/admin/delays').set(ADMIN_API).expect(200);
    // Read from the store: only topics with actions, by name; nothing hard-coded in the shop. The seeded merchants' digest schedules are two.
    expect(summary).toEqual([
      { topic: 'merchant.digest', waiting: 2, running: 0, dead: 0, paused: false },
      { topic: 'order.unpaid', waiting: 2, running: 0, dead: 0, paused: false },
      { topic: 'user.offline', waiting: 1, running: 0, dead: 0, paused: false },
    ]);

    const { body: page } = await shop.http.get('/api/admin/delays/order.unpaid?limit=1').set(ADMIN_API).expect(200);
    expect(page).toMatchObject({ total: 2, offset: 0, limit: 1, items: [{ topic: 'order.unpaid', key: ids[0], state: 'waiting', attempt: 1 }] });
    const { body: next } = await shop.http.get('/api/admin/delays/order.unpaid?offset=1&limit=1').set(ADMIN_API).expect(200);
    expect(next).toMatchObject({ total: 2, items: [{ key: ids[1] }] });

    await shop.http.get('/api/admin/delays/order.unpaid/dead').set(ADMIN_API).expect(200, { items: [], total: 0, offset: 0, limit: 100 });
  });

  it('answers 404 when re-driving an action that is not dead, and 400 for a bad page', async () => {
    await shop.http.post('/api/admin/delays/order.unpaid/dead/nothing/redrive').set(ADMIN_API).expect(404);
    await shop.http.post('/api/admin/delays/order.unpaid/dead/redrive').set(ADMIN_API).expect(200, { topic: 'order.unpaid', redriven: 0 });
    const { body } = await shop.http.get('/api/admin/delays/order.unpaid?limit=0').set(ADMIN_API).expect(400);
    expect((body as { message: string[] }).message).toEqual(['limit must not be less than 1']);
  });
});

// On PostgreSQL an offset past a 32-bit integer failed in the statement itself (SQLSTATE 22003) and answered 500.
describe('Admin (e2e) on the postgres driver: a page no listing can read', () => {
  const fixture = useShopFixture('postgres');

  it.each([
    ['pending', ''],
    ['dead', '/dead'],
  ])('answers offset=99999999999 on the %s listing with a 400 and the library error code, and the largest offset with an empty page', async (_listing, suffix) => {
    const shop = await fixture.start({ env: { ADMIN_TOKEN: TEST_ADMIN_TOKEN } });
    const { body } = await shop.http.get(`/api/admin/delays/order.unpaid${suffix}?offset=99999999999`).set(ADMIN_API).expect(400);
    expect(body).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      code: 'ERR_DELAY_INVALID_PAGE',
      message: 'Invalid page: offset must be a whole number from 0 to 1000000000, got 99999999999',
    });
    await shop.http.get(`/api/admin/delays/order.unpaid${suffix}?offset=1000000000&limit=1000`).set(ADMIN_API).expect(200, { items: [], total: 0, offset: 1_000_000_000, limit: 1000 });
  });
});
