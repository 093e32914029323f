import { DelayEvent, DelayService, parseDuration } from 'nestjs-delay';
import { VirtualClock } from 'nestjs-delay/testing';
import { DataSource } from 'typeorm';
import { MerchantDigest } from '../../apps/shop/src/merchants/merchant-digest';
import { MerchantDigestsService } from '../../apps/shop/src/merchants/merchant-digests.service';
import { MerchantProfile } from '../../apps/shop/src/merchants/merchant-profile';
import { MERCHANT_DIGEST } from '../../apps/shop/src/merchants/merchant-topics';
import { Order } from '../../apps/shop/src/orders/order';
import { SHOP_DRIVERS, ShopUnderTest, sleep, timeoutsOf, useShopFixture } from './shop-drivers';
import { ADMIN_API, BootedShop, bootShop, TEST_ADMIN_TOKEN } from './shop-test-app';

interface ReceivedBatch {
  batchId: string;
  events: Array<{ id: string; type: string; digest?: MerchantDigest }>;
}

type Http = BootedShop['http'];

/** The wall time `instant` shows in `timeZone`, as "YYYY-MM-DD HH:MM:SS". */
function wallTime(instant: string, timeZone: string): string {
  return new Intl.DateTimeFormat('sv-SE', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' }).format(new Date(instant));
}

async function merchantAuth(http: Http, merchantId: string): Promise<{ authorization: string }> {
  const { body } = await http.post(`/api/admin/merchants/${merchantId}/token`).set(ADMIN_API).expect(201);
  return { authorization: `Bearer ${(body as { token: string }).token}` };
}

async function digestsOf(http: Http, merchantId: string, auth: { authorization: string }): Promise<MerchantDigest[]> {
  const { body } = await http.get(`/merchants/${merchantId}/digests`).set(auth).expect(200);
  return body as MerchantDigest[];
}

async function digestEvents(http: Http, merchantId: string): Promise<MerchantDigest[]> {
  const { body } = await http.get(`/webhook-receiver/${merchantId}`).expect(200);
  return (body as ReceivedBatch[]).flatMap((batch) => batch.events.filter((event) => event.type === 'merchant.digest').map((event) => event.digest as MerchantDigest));
}

async function placePaidOrder(http: Http, sku: string, quantity: number): Promise<Order> {
  const { body } = await http
    .post('/orders')
    .send({ buyerId: 'ann', lines: [{ sku, quantity }] })
    .expect(201);
  const order = body as Order;
  await http.post(`/orders/${order.id}/pay`).expect(200);
  return order;
}

describe.each(SHOP_DRIVERS)('Merchant zones and daily digests (e2e) on the %s driver', (driver) => {
  const fixture = useShopFixture(driver);
  const { WEBHOOK_WINDOW } = timeoutsOf(driver);
  let shop: ShopUnderTest;

  beforeEach(async () => {
    shop = await fixture.start({ listen: true, env: { ADMIN_TOKEN: TEST_ADMIN_TOKEN, WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' } });
  });

  /** The merchant's profile: a schedule just created or changed reports its next 09:00 at once (issue 31, point 4). */
  async function settledProfile(auth: { authorization: string }): Promise<MerchantProfile> {
    return (await shop.http.get('/merchants/kettles/time-zone').set(auth).expect(200)).body as MerchantProfile;
  }

  it('an admin creates a merchant in its zone and the merchant moves it with its token: the digest schedule follows to 09:00 local; an unknown zone is refused with the library code and changes nothing', async () => {
    const { http } = shop;
    // The seeded merchants got theirs at startup, in UTC, before the shop answered: the next 09:00 is there at the first read,
    // whether or not the schedule's first step has run yet.
    const leafyAuth = await merchantAuth(http, 'leafy');
    const leafy = (await http.get('/merchants/leafy/time-zone').set(leafyAuth).expect(200)).body as MerchantProfile;
    expect(leafy).toMatchObject({ id: 'leafy', timeZone: 'UTC' });
    expect(wallTime(leafy.nextDigestAt as string, 'UTC').slice(11)).toBe('09:00:00');

    await http.post('/api/admin/merchants').send({ id: 'kettles', name: 'Kettle Works', timeZone: 'Asia/Tokyo' }).expect(401);
    const created = (await http.post('/api/admin/merchants').set(ADMIN_API).send({ id: 'kettles', name: 'Kettle Works', timeZone: 'asia/tokyo' }).expect(201)).body as MerchantProfile;
    expect(created).toMatchObject({ id: 'kettles', name: 'Kettle Works', timeZone: 'Asia/Tokyo' });
    await http.post('/api/admin/merchants').set(ADMIN_API).send({ id: 'kettles', name: 'Again' }).expect(409);
    const kettles = await merchantAuth(http, 'kettles');
    const tokyo = await settledProfile(kettles);
    const next = Date.parse(tokyo.nextDigestAt as string);
    expect(next).toBeGreaterThan(shop.time.now());
    expect(next).toBeLessThanOrEqual(shop.time.now() + 86_400_000);
    expect(wallTime(tokyo.nextDigestAt as string, 'Asia/Tokyo').slice(11)).toBe('09:00:00');

    await http.put('/merchants/kettles/time-zone').set(kettles).send({ timeZone: 'America/New_York' }).expect(200).expect(({ body }) => expect(body).toMatchObject({ timeZone: 'America/New_York' }));
    const moved = await settledProfile(kettles);
    expect(moved.timeZone).toBe('America/New_York');
    expect(wallTime(moved.nextDigestAt as string, 'America/New_York').slice(11)).toBe('09:00:00');
    // The schedule as its own first step after the move leaves it (that step records the instant it reached, lastRunAt,
    // and may come a moment after the move on a busy machine): read until two reads 200 ms apart agree.
    const readSchedule = (): ReturnType<DelayService['getRecurring']> => shop.app.get(DelayService).getRecurring(MERCHANT_DIGEST, 'kettles');
    let schedule = await readSchedule();
    for (let look = 0; look < 25; look++) {
      await sleep(200);
      const again = await readSchedule();
      if (JSON.stringify(again) === JSON.stringify(schedule)) break;
      schedule = again;
    }
    expect(schedule).toMatchObject({ recurrence: { cron: '0 9 * * *', timeZone: 'America/New_York' }, payload: { timeZone: 'America/New_York' } });

    // Unknown zones: 400 with the delay library's code, and the merchant, its schedule and the merchant list as they were.
    const { body: refused } = await http.put('/merchants/kettles/time-zone').set(kettles).send({ timeZone: 'Mars/Olympus_Mons' }).expect(400);
    expect(refused).toMatchObject({ code: 'ERR_DELAY_UNKNOWN_TIME_ZONE' });
    expect((await http.get('/merchants/kettles/time-zone').set(kettles).expect(200)).body).toEqual(moved);
    expect(await shop.app.get(DelayService).getRecurring(MERCHANT_DIGEST, 'kettles')).toEqual(schedule);
    const { body: refusedCreate } = await http.post('/api/admin/merchants').set(ADMIN_API).send({ id: 'nowhere', name: 'Nowhere', timeZone: 'Nowhere/Land' }).expect(400);
    expect(refusedCreate).toMatchObject({ code: 'ERR_DELAY_UNKNOWN_TIME_ZONE' });
    const { body: merchants } = await http.get('/merchants').expect(200);
    expect((merchants as Array<{ id: string }>).map((merchant) => merchant.id)).toEqual(['kettles', 'leafy', 'potters']);
    expect(await shop.app.get(DelayService).getRecurring(MERCHANT_DIGEST, 'nowhere')).toBeNull();

    // Only the merchant's own token.
    await http.put('/merchants/kettles/time-zone').send({ timeZone: 'UTC' }).expect(401);
    await http.put('/merchants/kettles/time-zone').set(await merchantAuth(http, 'potters')).send({ timeZone: 'UTC' }).expect(403);
    await http.get('/merchants/kettles/digests').expect(401);
    await http.get('/merchants/kettles/digests').set(kettles).expect(200).expect(({ body }) => expect(body).toEqual([]));
  });

  it("an occurrence builds the previous local day's digest from the paid orders, stores it once however often it runs, and sends it once through the merchant's webhook", async () => {
    const { http } = shop;
    const leafy = await merchantAuth(http, 'leafy');
    await http.put('/merchants/leafy/webhook').set(leafy).send({ url: `${shop.baseUrl}/webhook-receiver/leafy` }).expect(200);
    const yesterday = await placePaidOrder(http, 'green-tea', 2);
    await placePaidOrder(http, 'black-tea', 1);
    // Move one payment a day back: the real clocks cannot be moved, the data can.
    await shop.app.get(DataSource).query(`UPDATE orders SET paid_at = paid_at - interval '1 day' WHERE id = $1`, [yesterday.id]);
    const completed: DelayEvent[] = [];
    const subscription = shop.app.get(DelayService).events$.subscribe((event) => {
      if (event.topic === MERCHANT_DIGEST && event.type === 'completed') completed.push(event);
    });
    await http.post('/merchants/leafy/digest').set(ADMIN_API).expect(404);
    await http.post('/api/admin/merchants/leafy/digest').expect(401);
    for (const runs of [1, 2]) {
      // An extra occurrence now, the cadence unchanged: both build the same day's digest.
      await http.post('/api/admin/merchants/leafy/digest').set(ADMIN_API).expect(200).expect(({ body }) => expect(body).toEqual({ merchantId: 'leafy', started: true }));
      const done = await shop.time.at(shop.time.now(), async () => completed.length, (count) => count >= runs);
      expect(done).toBe(runs);
    }
    subscription.unsubscribe();
    const digests = await digestsOf(http, 'leafy', leafy);
    const day = new Date(shop.time.now() - 86_400_000).toISOString().slice(0, 10);
    expect(digests).toEqual([expect.objectContaining({ merchantId: 'leafy', localDate: day, timeZone: 'UTC', ordersCount: 1, revenueCents: 2 * 650, from: `${day}T00:00:00.000Z` })]);
    const sent = await shop.time.at(shop.time.now() + parseDuration(WEBHOOK_WINDOW), () => digestEvents(http, 'leafy'), (events) => events.length > 0);
    expect(sent).toEqual([digests[0]]);
  });
});

describe('Merchant daily digests across a DST change (e2e, wheel and a VirtualClock)', () => {
  let shop: BootedShop | undefined;

  afterEach(async () => {
    await shop?.app.close();
    shop = undefined;
  });

  it('Europe/Paris around 25 October 2026: one digest per local date, each at 09:00 local, the 25-hour day whole', async () => {
    const clock = new VirtualClock(Date.parse('2026-10-23T10:00:00Z'));
    shop = await bootShop({ clock, listen: true, env: { ADMIN_TOKEN: TEST_ADMIN_TOKEN, WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' } });
    const { http } = shop;
    const fired: string[] = [];
    const subscription = shop.app.get(DelayService).events$.subscribe((event) => {
      // Leafy's occurrences only (key "leafy", U+001E, its instant): its schedule's tick fires too, to create them, and so do the potters' digests.
      if (event.topic === MERCHANT_DIGEST && event.type === 'fired' && event.key.startsWith('leafy\u001e')) fired.push(event.at.toISOString());
    });
    const leafy = await merchantAuth(http, 'leafy');
    await http.put('/merchants/leafy/time-zone').set(leafy).send({ timeZone: 'Europe/Paris' }).expect(200);
    await http.put('/merchants/leafy/webhook').set(leafy).send({ url: `${shop.baseUrl}/webhook-receiver/leafy` }).expect(200);
    // Payments by their local time in Paris; on 25 October 02:00-03:00 happens twice (CEST, then CET).
    const payments: Array<[string, number]> = [
      ['2026-10-23T20:00:00Z', 1], // 23 Oct 22:00 CEST
      ['2026-10-24T21:30:00Z', 2], // 24 Oct 23:30 CEST
      ['2026-10-24T22:30:00Z', 3], // 25 Oct 00:30 CEST
      ['2026-10-25T00:30:00Z', 1], // 25 Oct 02:30 CEST, the first 02:30
      ['2026-10-25T01:30:00Z', 1], // 25 Oct 02:30 CET, the second
      ['2026-10-25T22:30:00Z', 1], // 25 Oct 23:30 CET
      ['2026-10-25T23:30:00Z', 4], // 26 Oct 00:30 CET
    ];
    for (const [at, quantity] of payments) {
      await clock.advanceTo(Date.parse(at));
      await placePaidOrder(http, 'green-tea', quantity);
    }
    await clock.advanceTo(Date.parse('2026-10-27T12:00:00Z'));
    subscription.unsubscribe();

    const digests = (await digestsOf(http, 'leafy', leafy)).reverse();
    const day = (localDate: string, from: string, to: string, scheduledAt: string, ordersCount: number, quantity: number) => ({
      merchantId: 'leafy',
      localDate,
      timeZone: 'Europe/Paris',
      from,
      to,
      ordersCount,
      revenueCents: quantity * 650,
      scheduledAt,
      builtAt: scheduledAt,
    });
    expect(digests).toEqual([
      day('2026-10-23', '2026-10-22T22:00:00.000Z', '2026-10-23T22:00:00.000Z', '2026-10-24T07:00:00.000Z', 1, 1),
      day('2026-10-24', '2026-10-23T22:00:00.000Z', '2026-10-24T22:00:00.000Z', '2026-10-25T08:00:00.000Z', 1, 2),
      // 25 hours: four orders, the two 02:30s among them.
      day('2026-10-25', '2026-10-24T22:00:00.000Z', '2026-10-25T23:00:00.000Z', '2026-10-26T08:00:00.000Z', 4, 3 + 1 + 1 + 1),
      day('2026-10-26', '2026-10-25T23:00:00.000Z', '2026-10-26T23:00:00.000Z', '2026-10-27T08:00:00.000Z', 1, 4),
    ]);
    // Each 09:00 ran once, and each digest went out once.
    expect(fired).toEqual(digests.map((digest) => digest.scheduledAt));
    expect((await digestEvents(http, 'leafy')).map((digest) => digest.localDate)).toEqual(digests.map((digest) => digest.localDate));
  });

  it('a retry of the same occurrence stores and sends nothing more', async () => {
    const clock = new VirtualClock(Date.parse('2026-06-10T06:00:00Z'));
    shop = await bootShop({ clock, listen: true, env: { ADMIN_TOKEN: TEST_ADMIN_TOKEN, WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' } });
    const { http } = shop;
    const leafy = await merchantAuth(http, 'leafy');
    await http.put('/merchants/leafy/webhook').set(leafy).send({ url: `${shop.baseUrl}/webhook-receiver/leafy` }).expect(200);
    await clock.advanceTo(Date.parse('2026-06-10T08:00:00Z'));
    await placePaidOrder(http, 'black-tea', 1);
    const digests = shop.app.get(MerchantDigestsService);
    const scheduledAt = new Date('2026-06-11T09:00:00Z');
    const first = await digests.build('leafy', 'UTC', scheduledAt);
    const again = await digests.build('leafy', 'UTC', scheduledAt);
    expect(first).toMatchObject({ stored: true, digest: { localDate: '2026-06-10', ordersCount: 1, revenueCents: 900 } });
    expect(again).toMatchObject({ stored: false, digest: { localDate: '2026-06-10' } });
    await clock.advance('3s');
    expect(await digestsOf(http, 'leafy', leafy)).toHaveLength(1);
    expect(await digestEvents(http, 'leafy')).toHaveLength(1);
  });
});
