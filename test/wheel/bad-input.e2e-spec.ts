import { Subscription } from 'rxjs';
import {
  DelayError,
  DelayEvent,
  DelayModule,
  DelayService,
  DueTimeOutOfRangeError,
  InvalidDurationError,
  InvalidKeyError,
  InvalidPageError,
  InvalidScheduleOptionsError,
  InvalidTopicError,
  PayloadNotSerializableError,
  PayloadTooLargeError,
  PendingAction,
  ScheduleOptions,
  VirtualClock,
} from 'nestjs-delay';
import { useApps } from './support/apps';

const TOPIC = 'order.unpaid';
const KEY = 'o-1';
const DAY = 86_400_000;
const MAX_PAYLOAD_BYTES = 1_000;
const HUNDRED_YEARS = 100 * 365 * DAY;

type ErrorClass = abstract new (...args: never[]) => DelayError;

/**
 * Every refused call is made against a topic that already holds one pending
 * action, (order.unpaid, o-1), mostly on that very key: a call that slipped
 * through would replace or move it. Each test then checks the call threw the
 * typed error with its code, and that nothing changed: the action is intact,
 * the count is the same, and no event was emitted.
 */
describe('bad input is refused with a typed error and changes nothing (wheel driver)', () => {
  const apps = useApps();
  let clock: VirtualClock;
  let delay: DelayService;
  let existing: PendingAction | null;
  let events: DelayEvent[];
  let subscription: Subscription;

  beforeEach(async () => {
    clock = new VirtualClock();
    const app = await apps.boot({ imports: [DelayModule.forRoot({ clock, maxPayloadBytes: MAX_PAYLOAD_BYTES })] });
    delay = app.get(DelayService);
    await delay.schedule(TOPIC, KEY, { delay: '30m', payload: { total: 10 } });
    existing = await delay.get(TOPIC, KEY);
    expect(existing).toMatchObject({ key: KEY, payload: { total: 10 } });
    events = [];
    subscription = delay.events$.subscribe((event) => events.push(event));
  });

  afterEach(() => subscription.unsubscribe());

  async function expectRefused(call: Promise<unknown>, type: ErrorClass, code: string): Promise<void> {
    await expect(call).rejects.toBeInstanceOf(type);
    await expect(call).rejects.toBeInstanceOf(DelayError);
    await expect(call).rejects.toMatchObject({ code });
    expect(await delay.get(TOPIC, KEY)).toEqual(existing);
    expect(await delay.count(TOPIC)).toBe(1);
    expect(events).toEqual([]);
  }

  const schedule = (options: unknown, topic: unknown = TOPIC, key: unknown = KEY): Promise<unknown> =>
    delay.schedule(topic as string, key as string, options as ScheduleOptions);

  describe('topic', () => {
    it('refuses an empty topic', async () => {
      await expectRefused(schedule({ delay: '1m' }, ''), InvalidTopicError, 'ERR_DELAY_INVALID_TOPIC');
    });

    it('refuses a topic longer than 100 characters', async () => {
      await expectRefused(schedule({ delay: '1m' }, 'o'.repeat(101)), InvalidTopicError, 'ERR_DELAY_INVALID_TOPIC');
    });

    it.each(['order unpaid', 'order/unpaid', '{order}.unpaid', '.order', 'ordér', 'order\n'])('refuses a topic with bad characters: %j', async (topic) => {
      await expectRefused(schedule({ delay: '1m' }, topic), InvalidTopicError, 'ERR_DELAY_INVALID_TOPIC');
    });

    it('refuses a topic that is not a string', async () => {
      await expectRefused(schedule({ delay: '1m' }, 7), InvalidTopicError, 'ERR_DELAY_INVALID_TOPIC');
    });

    it('refuses a bad topic on cancel too', async () => {
      await expectRefused(delay.cancel('', KEY), InvalidTopicError, 'ERR_DELAY_INVALID_TOPIC');
    });
  });

  describe('key', () => {
    it('refuses a key that is not a string', async () => {
      await expectRefused(schedule({ delay: '1m' }, TOPIC, 42), InvalidKeyError, 'ERR_DELAY_INVALID_KEY');
    });

    it('refuses an empty key', async () => {
      await expectRefused(schedule({ delay: '1m' }, TOPIC, ''), InvalidKeyError, 'ERR_DELAY_INVALID_KEY');
    });

    it('refuses a key longer than 512 characters', async () => {
      await expectRefused(schedule({ delay: '1m' }, TOPIC, 'k'.repeat(513)), InvalidKeyError, 'ERR_DELAY_INVALID_KEY');
    });
  });

  describe('due time', () => {
    it('refuses a negative delay', async () => {
      await expectRefused(schedule({ delay: -1 }), InvalidDurationError, 'ERR_DELAY_INVALID_DURATION');
    });

    it('refuses a NaN delay', async () => {
      await expectRefused(schedule({ delay: Number.NaN }), InvalidDurationError, 'ERR_DELAY_INVALID_DURATION');
    });

    it("refuses an unparseable delay string ('soon')", async () => {
      await expectRefused(schedule({ delay: 'soon' }), InvalidDurationError, 'ERR_DELAY_INVALID_DURATION');
    });

    it('refuses both delay and at', async () => {
      await expectRefused(schedule({ delay: '1m', at: new Date(clock.now() + 60_000) }), InvalidScheduleOptionsError, 'ERR_DELAY_INVALID_SCHEDULE_OPTIONS');
    });

    it('refuses neither delay nor at', async () => {
      await expectRefused(schedule({ payload: { total: 99 } }), InvalidScheduleOptionsError, 'ERR_DELAY_INVALID_SCHEDULE_OPTIONS');
    });

    it('refuses missing options', async () => {
      await expectRefused(schedule(undefined), InvalidScheduleOptionsError, 'ERR_DELAY_INVALID_SCHEDULE_OPTIONS');
    });

    it('refuses an invalid Date', async () => {
      await expectRefused(schedule({ at: new Date('not a date') }), InvalidScheduleOptionsError, 'ERR_DELAY_INVALID_SCHEDULE_OPTIONS');
    });

    it('refuses `at` further in the past than maxPast (1 day by default)', async () => {
      await expectRefused(schedule({ at: new Date(clock.now() - DAY - 1) }), DueTimeOutOfRangeError, 'ERR_DELAY_DUE_TIME_OUT_OF_RANGE');
    });

    it("refuses `at` beyond the driver's horizon (100 years)", async () => {
      await expectRefused(schedule({ at: clock.now() + HUNDRED_YEARS + 1 }), DueTimeOutOfRangeError, 'ERR_DELAY_DUE_TIME_OUT_OF_RANGE');
    });

    it("refuses a delay beyond the driver's horizon", async () => {
      await expectRefused(schedule({ delay: '101y' }), DueTimeOutOfRangeError, 'ERR_DELAY_DUE_TIME_OUT_OF_RANGE');
    });

    it('refuses a bad due time on reschedule, leaving the action where it was', async () => {
      await expectRefused(delay.reschedule(TOPIC, KEY, { delay: 'soon' }), InvalidDurationError, 'ERR_DELAY_INVALID_DURATION');
      await expectRefused(delay.reschedule(TOPIC, KEY, { at: clock.now() - 2 * DAY }), DueTimeOutOfRangeError, 'ERR_DELAY_DUE_TIME_OUT_OF_RANGE');
    });
  });

  describe('payload', () => {
    it('refuses a payload holding a BigInt', async () => {
      await expectRefused(schedule({ delay: '1m', payload: { total: BigInt(10) } }), PayloadNotSerializableError, 'ERR_DELAY_PAYLOAD_NOT_SERIALIZABLE');
    });

    it('refuses a payload with a cycle', async () => {
      const order: Record<string, unknown> = { total: 10 };
      order.self = order;
      await expectRefused(schedule({ delay: '1m', payload: order }), PayloadNotSerializableError, 'ERR_DELAY_PAYLOAD_NOT_SERIALIZABLE');
    });

    it('refuses a payload that is a function', async () => {
      await expectRefused(schedule({ delay: '1m', payload: () => 10 }), PayloadNotSerializableError, 'ERR_DELAY_PAYLOAD_NOT_SERIALIZABLE');
    });

    it('refuses a payload over maxPayloadBytes', async () => {
      // 2-byte characters: the limit is on UTF-8 bytes, not on characters.
      const payload = 'é'.repeat(MAX_PAYLOAD_BYTES / 2);
      const call = schedule({ delay: '1m', payload });
      await expectRefused(call, PayloadTooLargeError, 'ERR_DELAY_PAYLOAD_TOO_LARGE');
      await expect(call).rejects.toMatchObject({ bytes: MAX_PAYLOAD_BYTES + 2, limit: MAX_PAYLOAD_BYTES });
    });
  });

  describe('options and paging', () => {
    it('refuses an unknown ifExists', async () => {
      await expectRefused(schedule({ delay: '1m', ifExists: 'overwrite', payload: { total: 99 } }), InvalidScheduleOptionsError, 'ERR_DELAY_INVALID_SCHEDULE_OPTIONS');
    });

    it.each([{ limit: 0 }, { limit: 1001 }, { limit: 2.5 }, { offset: -1 }, { offset: 1_000_000_001 }, { limit: Number.NaN }])('refuses a bad page %j', async (page) => {
      await expectRefused(delay.list(TOPIC, page), InvalidPageError, 'ERR_DELAY_INVALID_PAGE');
    });
  });

  it('accepts the boundary values the checks above refuse just past', async () => {
    const now = clock.now();
    await delay.schedule('t'.repeat(100), 'k'.repeat(512), { delay: 0 });
    await delay.schedule(TOPIC, 'oldest', { at: now - DAY });
    await delay.schedule(TOPIC, 'furthest', { at: now + HUNDRED_YEARS });
    // JSON of a string is its characters plus two quotes.
    await delay.schedule(TOPIC, 'fullest', { delay: '1m', payload: 'x'.repeat(MAX_PAYLOAD_BYTES - 2) });
    await delay.schedule(TOPIC, 'odd:key with/any {chars} ✓', { delay: '1m' });
    expect(await delay.count(TOPIC)).toBe(5);
    expect((await delay.list(TOPIC, { limit: 1000 })).items).toHaveLength(5);
  });
});
