import { UserPresence } from '../../apps/shop/src/presence/user-presence';
import { dueTime, SHOP_DRIVERS, ShopUnderTest, timeoutsOf, useShopFixture } from './shop-drivers';
import { ADMIN_API, TEST_ADMIN_TOKEN } from './shop-test-app';

describe.each(SHOP_DRIVERS)('Presence (e2e) on the %s driver: heartbeats keep a user online, silence takes them offline', (driver) => {
  const fixture = useShopFixture(driver);
  const { OFFLINE_AFTER } = timeoutsOf(driver);
  let shop: ShopUnderTest;

  beforeEach(async () => {
    shop = await fixture.start({ env: { ADMIN_TOKEN: TEST_ADMIN_TOKEN } });
  });

  async function heartbeat(userId: string): Promise<UserPresence> {
    const { body } = await shop.http.post(`/presence/${userId}/heartbeat`).expect(200);
    return body as UserPresence;
  }

  async function presenceOf(userId: string): Promise<UserPresence> {
    const { body } = await shop.http.get(`/presence/${userId}`).expect(200);
    return body as UserPresence;
  }

  it(`keeps a user online for as long as heartbeats come within OFFLINE_AFTER (${OFFLINE_AFTER}) of each other`, async () => {
    const { every, count } = fixture.profile.heartbeats;
    let last = await heartbeat('ann');
    expect(last).toMatchObject({ userId: 'ann', online: true });
    // One heartbeat and then silence: proves the time below is long enough for the offline action to fire.
    await heartbeat('bob');

    // Far past OFFLINE_AFTER since the first heartbeat (ten minutes on the wheel), each beat within it of the one before.
    for (let beat = 0; beat < count; beat++) {
      await shop.time.pass(every);
      last = await shop.time.stillBefore(offlineDueAt(last), async () => {
        expect(await presenceOf('ann')).toMatchObject({ online: true });
        return heartbeat('ann');
      });
    }
    expect(await presenceOf('ann')).toMatchObject({ online: true });
    expect(await presenceOf('bob')).toMatchObject({ online: false });

    // One pending action per user, re-armed by each heartbeat, not one per heartbeat.
    const { body: pending } = await shop.http.get('/api/admin/delays/user.offline').set(ADMIN_API).expect(200);
    expect(pending).toMatchObject({ total: 1, items: [{ key: 'ann' }] });
  });

  it(`marks a user offline OFFLINE_AFTER (${OFFLINE_AFTER}) after their last heartbeat`, async () => {
    await heartbeat('ann');
    await shop.time.pass((2 / 3) * shop.config.offlineAfterMs);
    const last = await heartbeat('ann');
    const dueAt = offlineDueAt(last);
    shop.time.expectDelay(last.lastSeenAt, dueAt, shop.config.offlineAfterMs);

    expect(await shop.time.justBefore(dueAt, () => presenceOf('ann'))).toMatchObject({ online: true });

    const offline = await shop.time.at(dueAt, () => presenceOf('ann'), (presence) => !presence.online);
    expect(offline).toMatchObject({ online: false, lastSeenAt: last.lastSeenAt });
    shop.time.expectOnTime(offline.offlineSince, dueAt);
  });

  it('brings an offline user back online with the next heartbeat, and tracks users apart', async () => {
    const ann = await heartbeat('ann');
    await shop.time.pass(shop.config.offlineAfterMs / 2);
    const bob = await heartbeat('bob');

    expect(await shop.time.at(offlineDueAt(ann), () => presenceOf('ann'), (presence) => !presence.online)).toMatchObject({ online: false });
    expect(await shop.time.stillBefore(offlineDueAt(bob), () => presenceOf('bob'))).toMatchObject({ online: true });

    await heartbeat('ann');
    expect(await presenceOf('ann')).toMatchObject({ online: true });
  });
});

function offlineDueAt(presence: UserPresence): string {
  return dueTime(presence.offlineDueAt, `offlineDueAt for "${presence.userId}"`);
}
