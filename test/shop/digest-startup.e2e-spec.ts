import { DelayService, RecurringSchedule } from 'nestjs-delay';
import { DataSource } from 'typeorm';
import { DigestSchedules } from '../../apps/shop/src/merchants/digest-schedules';
import { MERCHANT_DIGEST } from '../../apps/shop/src/merchants/merchant-topics';
import { DELAY_DRIVER } from '../../libs/delay/src/delay.constants';
import type { DelayDriver } from '../../libs/delay/src/interfaces/delay-driver.interface';
import { SHOP_DRIVERS, useShopFixture } from './shop-drivers';

/** Merchants added to the seeded two before the shop starts again. */
const MORE = 3000;

/**
 * True when `at` is a 09:00 UTC at most a day after `now`: the next digest of a merchant in UTC (or, for a
 * schedule made in the ten minutes before `now`, the 09:00 that fell in between).
 */
function isNextNine(at: Date | null, now: number): boolean {
  return at !== null && at.getTime() > now - 600_000 && at.getTime() <= now + 86_400_000 && at.toISOString().endsWith('T09:00:00.000Z');
}

// Issue 31, point 8: the shop upserted one digest schedule per merchant, one call each, before it listened (141 s to the
// first answer at 10,002 merchants), and a restart wrote every one again.
describe.each(SHOP_DRIVERS)('Digest schedules at startup (e2e) on the %s driver', (driver) => {
  const fixture = useShopFixture(driver);

  it(`a shop starting with ${MORE + 2} merchants answers only once every digest schedule is written, each with its next 09:00; reconciling them again writes nothing`, async () => {
    const first = await fixture.start();
    const merchants = Array.from({ length: MORE }, (_, n) => `m${String(n).padStart(5, '0')}`);
    await first.app.get(DataSource).query(`INSERT INTO merchants (id, name) SELECT id, 'Merchant ' || id FROM unnest($1::text[]) AS id`, [merchants]);
    const { databaseUrl } = first;
    await first.close();

    // The same database (and, on Redis, the same store) with the new merchants: a restart.
    const shop = await fixture.start({ listen: true, env: { DATABASE_URL: databaseUrl } });
    await shop.http.get('/health').expect(200);
    const delay = shop.app.get(DelayService);
    const now = shop.time.now();
    const schedules: RecurringSchedule[] = await delay.listRecurring(MERCHANT_DIGEST);
    expect(schedules.map((schedule) => schedule.key)).toEqual([...merchants, 'leafy', 'potters'].sort());
    expect(schedules.filter((schedule) => !isNextNine(schedule.nextRunAt, now)).map((schedule) => [schedule.key, schedule.nextRunAt])).toEqual([]);

    // Another instance starting, or this one again: every schedule is as wanted, nothing is written.
    const store = shop.app.get<DelayDriver>(DELAY_DRIVER);
    const single = jest.spyOn(store as Required<Pick<DelayDriver, 'advanceSeries'>>, 'advanceSeries');
    const many = store.advanceSeriesMany ? jest.spyOn(store as Required<Pick<DelayDriver, 'advanceSeriesMany'>>, 'advanceSeriesMany') : undefined;
    try {
      await shop.app.get(DigestSchedules).onApplicationBootstrap();
      // The schedules' own ticks (conditioned on their token) may be stepping meanwhile; a per-key write is conditioned on a payload or absence.
      const writes = [...single.mock.calls.map(([command]) => command), ...(many?.mock.calls ?? []).flatMap(([, commands]) => commands)].filter((command) => !('token' in command.expect));
      expect(writes.map((command) => command.key)).toEqual([]);
    } finally {
      single.mockRestore();
      many?.mockRestore();
    }
  }, 180_000);
});
