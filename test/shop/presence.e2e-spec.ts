import { ShopTestApp, startShop } from './shop-test-app';

describe('Presence (e2e): heartbeats keep a user online, 30 s of silence takes them offline', () => {
  let shop: ShopTestApp;

  beforeEach(async () => {
    shop = await startShop();
  });

  afterEach(async () => {
    await shop.app.close();
  });

  async function presenceOf(userId: string): Promise<Record<string, unknown>> {
    const { body } = await shop.http.get(`/presence/${userId}`).expect(200);
    return body as Record<string, unknown>;
  }

  it('keeps a user online for as long as heartbeats come within 30 s of each other', async () => {
    const { body: first } = await shop.http.post('/presence/ann/heartbeat').expect(200);
    expect(first).toMatchObject({ userId: 'ann', online: true });

    // Ten minutes of heartbeats 25 s apart: far past 30 s since the first.
    for (let beat = 0; beat < 24; beat++) {
      await shop.clock.advance('25s');
      await shop.http.post('/presence/ann/heartbeat').expect(200);
    }
    expect(await presenceOf('ann')).toMatchObject({ online: true });

    // One pending action per user, re-armed by each heartbeat, not one per heartbeat.
    const { body: pending } = await shop.http.get('/admin/delays/user.offline').expect(200);
    expect(pending).toMatchObject({ total: 1, items: [{ key: 'ann' }] });
  });

  it('marks a user offline 30 s after their last heartbeat', async () => {
    await shop.http.post('/presence/ann/heartbeat').expect(200);
    await shop.clock.advance('20s');
    const { body: last } = await shop.http.post('/presence/ann/heartbeat').expect(200);

    await shop.clock.advance('29s');
    expect(await presenceOf('ann')).toMatchObject({ online: true });

    await shop.clock.advance('1s');
    expect(await presenceOf('ann')).toMatchObject({ online: false, lastSeenAt: (last as { lastSeenAt: string }).lastSeenAt });
  });

  it('brings an offline user back online with the next heartbeat, and tracks users apart', async () => {
    await shop.http.post('/presence/ann/heartbeat').expect(200);
    await shop.clock.advance('15s');
    await shop.http.post('/presence/bob/heartbeat').expect(200);

    await shop.clock.advance('20s');
    expect(await presenceOf('ann')).toMatchObject({ online: false });
    expect(await presenceOf('bob')).toMatchObject({ online: true });

    await shop.http.post('/presence/ann/heartbeat').expect(200);
    expect(await presenceOf('ann')).toMatchObject({ online: true });
  });
});
