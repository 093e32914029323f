import { INestApplication, Injectable } from '@nestjs/common';
import { DelayError, DelayModuleOptions, DelayService, InvalidKeyError, InvalidPageError, OnRecurring, RecurringPage, RecurringSchedule } from 'nestjs-delay';
import { DELAY_DRIVER } from '../../libs/delay/src/delay.constants';
import type { DelayDriver } from '../../libs/delay/src/interfaces/delay-driver.interface';
import { bootDelayApp, pollUntil, sleep } from '../conformance/support/driver-fixture';
import { TestPostgresServer } from '../support/postgres-server';
import { TestRedisServer } from '../support/redis-server';

/** The topic whose schedules all fire every second while they are listed. */
const FIRING = 'lists.every';
/** Topics nobody handles here: their ticks never run, so what a write returns is all there is to see. */
const LEAP = 'lists.leap';
const BULK = 'lists.bulk';

@Injectable()
class Firing {
  runs = 0;

  @OnRecurring(FIRING, { concurrency: 64 })
  run(): void {
    this.runs++;
  }
}

/** The next 29 February 00:00 UTC strictly after `now`. */
function nextLeapDay(now: number): number {
  for (let year = new Date(now).getUTCFullYear(); ; year++) {
    const at = Date.UTC(year, 1, 29);
    if (new Date(at).getUTCMonth() === 1 && at > now) return at;
  }
}

/** The next 09:00 UTC strictly after `now`. */
function nextNineUtc(now: number): number {
  const day = new Date(now);
  const today = Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate(), 9);
  return today > now ? today : today + 86_400_000;
}

const keyOf = (n: number): string => `s-${String(n).padStart(5, '0')}`;
const keysOf = (schedules: ReadonlyArray<RecurringSchedule>): string[] => schedules.map((schedule) => schedule.key);

interface Target {
  readonly name: string;
  options(): DelayModuleOptions;
  start?(): Promise<void>;
  stop?(): Promise<void>;
}

let redis: TestRedisServer | undefined;
let postgres: TestPostgresServer | undefined;
let runId = 0;
const fresh = (): string => `lists_${process.pid}_${++runId}`;

const TARGETS: Target[] = [
  { name: 'wheel', options: () => ({ driver: { type: 'wheel', tickMs: 10 }, shutdownTimeout: '1s' }) },
  {
    name: 'redis',
    options: () => ({ driver: { type: 'redis', url: (redis as TestRedisServer).url, prefix: fresh() }, shutdownTimeout: '1s' }),
    start: async () => {
      redis = await TestRedisServer.start();
    },
    stop: () => (redis as TestRedisServer).dispose(),
  },
  {
    name: 'redis, 4 shards',
    options: () => ({ driver: { type: 'redis', url: (redis as TestRedisServer).url, prefix: fresh(), shards: 4 }, shutdownTimeout: '1s' }),
    start: async () => {
      redis = await TestRedisServer.start();
    },
    stop: () => (redis as TestRedisServer).dispose(),
  },
  {
    name: 'postgres',
    // 1,200 schedules every second keep the server busy: a busy machine may hold one of the case's statements past 5 s.
    options: () => ({ driver: { type: 'postgres', connectionString: (postgres as TestPostgresServer).url, schema: fresh(), lease: '5s', commandTimeout: '15s' }, shutdownTimeout: '1s' }),
    start: async () => {
      postgres = await TestPostgresServer.start();
    },
    stop: () => (postgres as TestPostgresServer).dispose(),
  },
];

describe.each(TARGETS)('recurring listings and bulk writes on the $name driver', (target) => {
  let app: INestApplication | undefined;

  beforeAll(async () => {
    await target.start?.();
  }, 60_000);
  afterAll(async () => {
    await target.stop?.();
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  async function boot(): Promise<{ delay: DelayService; driver: DelayDriver; firing: Firing }> {
    app = await bootDelayApp(target.options(), [Firing]);
    return { delay: app.get(DelayService), driver: app.get<DelayDriver>(DELAY_DRIVER), firing: app.get(Firing) };
  }

  // Issue 31, point 3: a listing paged by offset over the due-time order skipped and repeated schedules whose ticks re-armed meanwhile.
  it('lists each of 1,200 schedules exactly once, by key, while every one of them fires every second (listRecurring and pages of listRecurringPage)', async () => {
    const { delay, firing } = await boot();
    const keys = Array.from({ length: 1200 }, (_, n) => keyOf(n));
    for (let at = 0; at < keys.length; at += 100) {
      await Promise.all(keys.slice(at, at + 100).map((key) => delay.upsertRecurring(FIRING, key, { every: '1s', overlap: 'allow' })));
    }
    // Listed while the schedules fire: a full round of them at least, and at least 6 listings, however slow the machine.
    const firstRuns = firing.runs;
    await pollUntil(() => firing.runs > firstRuns, 'the schedules fire', 20_000);
    let listings = 0;
    while (listings < 6 || firing.runs < firstRuns + keys.length) {
      const whole = keysOf(await delay.listRecurring(FIRING));
      expect(whole).toEqual(keys);
      const paged: string[] = [];
      for (let after: string | null = null, pages = 0; pages === 0 || after !== null; pages++) {
        const page: RecurringPage = await delay.listRecurringPage(FIRING, { after, limit: 250 });
        paged.push(...keysOf(page.schedules));
        after = page.next;
      }
      expect(paged).toEqual(keys);
      listings++;
      // A pause between listings: the schedules keep firing (on the wheel, whose listing answers within one turn of the
      // event loop, only then), and on a busy machine the listings do not starve them.
      await sleep(50);
    }
  }, 90_000);

  it('a page of listRecurringPage reads only its schedules; a bad after or limit throws InvalidPageError', async () => {
    const { delay } = await boot();
    await delay.upsertRecurringMany(
      BULK,
      ['b', 'a', 'd', 'c'].map((key) => ({ key, cron: '0 9 * * *' })),
    );
    const first = await delay.listRecurringPage(BULK, { limit: 3 });
    expect(keysOf(first.schedules)).toEqual(['a', 'b', 'c']);
    expect(first.next).toBe('c');
    const last = await delay.listRecurringPage(BULK, { after: first.next, limit: 3 });
    expect(keysOf(last.schedules)).toEqual(['d']);
    expect(last.next).toBeNull();
    // A key that is no schedule's: the page starts where it would be.
    expect(keysOf((await delay.listRecurringPage(BULK, { after: 'bb' })).schedules)).toEqual(['c', 'd']);
    // Made and removed after a listing (Redis built its key index then): the next listing sees both.
    await delay.upsertRecurring(BULK, 'bc', { cron: '0 9 * * *' });
    await delay.removeRecurring(BULK, 'a');
    expect(keysOf(await delay.listRecurring(BULK))).toEqual(['b', 'bc', 'c', 'd']);
    for (const key of ['b', 'bc', 'c', 'd']) await delay.removeRecurring(BULK, key);
    expect(await delay.listRecurring(BULK)).toEqual([]);
    await delay.upsertRecurring(BULK, 'z', { cron: '0 9 * * *' });
    expect(keysOf(await delay.listRecurring(BULK))).toEqual(['z']);
    for (const page of [{ limit: 0 }, { limit: 1001 }, { limit: 2.5 }, { after: 'x\u001ey' }, { after: '' }, { after: 7 as unknown as string }]) {
      await expect(delay.listRecurringPage(BULK, page)).rejects.toBeInstanceOf(InvalidPageError);
    }
  }, 30_000);

  // Issue 31, point 4: a schedule just made reported its own instant as its next run until its tick had run.
  it('upsertRecurring returns the real next run of a new or changed schedule, not the instant of the call, and get and list agree', async () => {
    const { delay } = await boot();
    const before = Date.now();
    const leap = await delay.upsertRecurring(LEAP, 'leap', { cron: '0 0 29 2 *' });
    expect(leap.nextRunAt?.getTime()).toBe(nextLeapDay(before));
    expect((await delay.getRecurring(LEAP, 'leap'))?.nextRunAt?.getTime()).toBe(nextLeapDay(before));
    expect((await delay.listRecurring(LEAP))[0].nextRunAt?.getTime()).toBe(nextLeapDay(before));
    // A changed recurrence applies from its next instant after now.
    // (Either side of the call: it may straddle 09:00 or the hour.)
    const beforeChange = Date.now();
    const changed = await delay.upsertRecurring(LEAP, 'leap', { cron: '0 9 * * *' });
    expect([nextNineUtc(beforeChange), nextNineUtc(Date.now())]).toContain(changed.nextRunAt?.getTime());
    const nextHour = (at: number): number => Math.floor(at / 3_600_000) * 3_600_000 + 3_600_000;
    const beforeHourly = Date.now();
    const hourly = await delay.upsertRecurring(LEAP, 'hourly', { every: '1h' });
    expect([nextHour(beforeHourly), nextHour(Date.now())]).toContain(hourly.nextRunAt?.getTime());
    // Paused: no next run.
    await delay.pauseRecurring(LEAP, 'hourly');
    expect((await delay.getRecurring(LEAP, 'hourly'))?.nextRunAt).toBeNull();
  }, 30_000);

  // Issue 31, point 8: one schedule per merchant, one call each, took minutes at startup; a restart wrote every one again.
  it('upsertRecurringMany creates 3,000 schedules with their real next runs, writes nothing when called again unchanged, and one write for one change', async () => {
    const { delay, driver } = await boot();
    const entries = Array.from({ length: 3000 }, (_, n) => ({ key: keyOf(n), cron: '0 9 * * *', payload: { merchant: n as number | string } }));
    const written = await delay.upsertRecurringMany(BULK, entries);
    expect(keysOf(written)).toEqual(entries.map((entry) => entry.key));
    const nine = nextNineUtc(Date.now());
    expect(written.every((schedule) => schedule.nextRunAt !== null && Math.abs(schedule.nextRunAt.getTime() - nine) <= 86_400_000)).toBe(true);
    expect(written[1234]).toMatchObject({ key: keyOf(1234), payload: { merchant: 1234 }, recurrence: { cron: '0 9 * * *' }, paused: false, declared: false });
    expect(await delay.getRecurring(BULK, keyOf(1234))).toEqual(written[1234]);
    expect(keysOf(await delay.listRecurring(BULK))).toEqual(entries.map((entry) => entry.key));

    // Every write is seen: one step at a time, or many in one call.
    const single = jest.spyOn(driver as Required<Pick<DelayDriver, 'advanceSeries'>>, 'advanceSeries');
    const many = driver.advanceSeriesMany ? jest.spyOn(driver as Required<Pick<DelayDriver, 'advanceSeriesMany'>>, 'advanceSeriesMany') : undefined;
    const writtenKeys = (): string[] => [...single.mock.calls.map(([command]) => command.key), ...(many?.mock.calls ?? []).flatMap(([, commands]) => commands.map((command) => command.key))];
    try {
      // A restart: every schedule as wanted already, nothing is written.
      const again = await delay.upsertRecurringMany(BULK, entries);
      expect(again).toEqual(written);
      expect(writtenKeys()).toEqual([]);
      // One merchant changed: one write.
      const changed = entries.map((entry, n) => (n === 42 ? { ...entry, payload: { merchant: 'moved' } } : entry));
      const after = await delay.upsertRecurringMany(BULK, changed);
      expect(after[42].payload).toEqual({ merchant: 'moved' });
      expect(after[42].nextRunAt).toEqual(written[42].nextRunAt);
      expect(writtenKeys()).toEqual([keyOf(42)]);
    } finally {
      single.mockRestore();
      many?.mockRestore();
    }
  }, 60_000);

  it('upsertRecurringMany checks every entry first: a bad one throws its typed error and nothing is written', async () => {
    const { delay } = await boot();
    const entries = Array.from({ length: 1500 }, (_, n) => ({ key: keyOf(n), every: '1h' }));
    await expect(delay.upsertRecurringMany(BULK, [...entries, { key: keyOf(7), every: '1h' }])).rejects.toBeInstanceOf(InvalidKeyError);
    await expect(delay.upsertRecurringMany(BULK, [...entries, { key: 'a\u001eb', every: '1h' }])).rejects.toBeInstanceOf(InvalidKeyError);
    await expect(delay.upsertRecurringMany(BULK, [...entries, { key: 'z', every: 'often' }])).rejects.toBeInstanceOf(DelayError);
    expect(await delay.listRecurring(BULK)).toEqual([]);
  }, 30_000);
});
