import {
  DelayService,
  DueTimeOutOfRangeError,
  IfExists,
  InvalidDurationError,
  InvalidKeyError,
  InvalidPageError,
  InvalidScheduleOptionsError,
  InvalidTopicError,
  PayloadNotSerializableError,
  PayloadTooLargeError,
  ScheduleOptions,
} from 'nestjs-delay';
import { Booted, conformanceDrivers } from './support/driver-fixture';
import { TOPIC } from './support/probe';

const DAY = 86_400_000;
const YEAR = 365 * DAY;

type ErrorClass =
  | typeof InvalidTopicError
  | typeof InvalidKeyError
  | typeof InvalidDurationError
  | typeof DueTimeOutOfRangeError
  | typeof InvalidScheduleOptionsError
  | typeof InvalidPageError
  | typeof PayloadNotSerializableError
  | typeof PayloadTooLargeError;

interface BadInput {
  readonly name: string;
  /** The call, against an app where TOPIC.basic / 'existing' is pending; `now` is the driver's clock. */
  readonly call: (delay: DelayService, now: number) => Promise<unknown>;
  readonly error: ErrorClass;
  readonly code: string;
  /** For an absolute due time out of range: the dueAt the error must report. */
  readonly dueAt?: (now: number) => number;
  /** The whole message, where its wording is part of the contract. */
  readonly message?: string;
}

const cycle: { self?: unknown } = {};
cycle.self = cycle;

const schedule = (options: ScheduleOptions, topic: string = TOPIC.basic, key = 'existing') => (delay: DelayService) => delay.schedule(topic, key, options);
const at = (offsetMs: number, asDate: boolean) => (delay: DelayService, now: number) =>
  delay.schedule(TOPIC.basic, 'existing', { at: asDate ? new Date(now + offsetMs) : now + offsetMs, payload: 'changed' });

const TOPIC_CODE = 'ERR_DELAY_INVALID_TOPIC';
const KEY_CODE = 'ERR_DELAY_INVALID_KEY';
const DURATION_CODE = 'ERR_DELAY_INVALID_DURATION';
const RANGE_CODE = 'ERR_DELAY_DUE_TIME_OUT_OF_RANGE';
const OPTIONS_CODE = 'ERR_DELAY_INVALID_SCHEDULE_OPTIONS';
const PAGE_CODE = 'ERR_DELAY_INVALID_PAGE';
const PAYLOAD_CODE = 'ERR_DELAY_PAYLOAD_NOT_SERIALIZABLE';

/** Every input the contract says must be refused, with the error both drivers must give. */
const BAD_INPUTS: BadInput[] = [
  { name: 'empty topic', call: schedule({ delay: 100 }, ''), error: InvalidTopicError, code: TOPIC_CODE },
  { name: 'over-long topic', call: schedule({ delay: 100 }, 't'.repeat(101)), error: InvalidTopicError, code: TOPIC_CODE },
  { name: 'topic outside the safe alphabet', call: schedule({ delay: 100 }, 'conf basic{x}'), error: InvalidTopicError, code: TOPIC_CODE },
  { name: 'empty key', call: schedule({ delay: 100 }, TOPIC.basic, ''), error: InvalidKeyError, code: KEY_CODE },
  { name: 'over-long key', call: schedule({ delay: 100 }, TOPIC.basic, 'k'.repeat(513)), error: InvalidKeyError, code: KEY_CODE },
  // Redis stores keys as UTF-8, where a lone surrogate cannot be told from another (both become U+FFFD).
  { name: 'key with a lone surrogate', call: schedule({ delay: 100 }, TOPIC.basic, 'order-\ud800'), error: InvalidKeyError, code: KEY_CODE },
  { name: 'key that is not a string', call: schedule({ delay: 100 }, TOPIC.basic, 42 as unknown as string), error: InvalidKeyError, code: KEY_CODE },
  { name: 'negative delay', call: schedule({ delay: -1, payload: 'changed' }), error: InvalidDurationError, code: DURATION_CODE },
  { name: 'negative delay string', call: schedule({ delay: '-5s', payload: 'changed' }), error: InvalidDurationError, code: DURATION_CODE },
  { name: 'NaN delay', call: schedule({ delay: NaN, payload: 'changed' }), error: InvalidDurationError, code: DURATION_CODE },
  { name: 'infinite delay', call: schedule({ delay: Infinity, payload: 'changed' }), error: InvalidDurationError, code: DURATION_CODE },
  { name: 'garbage delay string', call: schedule({ delay: 'soon', payload: 'changed' }), error: InvalidDurationError, code: DURATION_CODE },
  { name: 'delay beyond the horizon', call: schedule({ delay: '101y', payload: 'changed' }), error: DueTimeOutOfRangeError, code: RANGE_CODE },
  { name: 'delay beyond the range of Date', call: schedule({ delay: 1e18, payload: 'changed' }), error: DueTimeOutOfRangeError, code: RANGE_CODE },
  { name: 'at (Date) far in the past', call: at(-2 * DAY, true), error: DueTimeOutOfRangeError, code: RANGE_CODE, dueAt: (now) => now - 2 * DAY },
  { name: 'at (epoch ms) far in the past', call: at(-2 * DAY, false), error: DueTimeOutOfRangeError, code: RANGE_CODE, dueAt: (now) => now - 2 * DAY },
  { name: 'at (Date) beyond the horizon', call: at(101 * YEAR, true), error: DueTimeOutOfRangeError, code: RANGE_CODE, dueAt: (now) => now + 101 * YEAR },
  { name: 'at (epoch ms) beyond the horizon', call: at(101 * YEAR, false), error: DueTimeOutOfRangeError, code: RANGE_CODE, dueAt: (now) => now + 101 * YEAR },
  {
    name: 'at the largest safe integer',
    call: schedule({ at: Number.MAX_SAFE_INTEGER, payload: 'changed' }),
    error: DueTimeOutOfRangeError,
    code: RANGE_CODE,
    dueAt: () => Number.MAX_SAFE_INTEGER,
  },
  { name: 'invalid Date', call: schedule({ at: new Date('not a date'), payload: 'changed' }), error: InvalidScheduleOptionsError, code: OPTIONS_CODE },
  { name: 'both delay and at', call: schedule({ delay: 100, at: 5 } as unknown as ScheduleOptions), error: InvalidScheduleOptionsError, code: OPTIONS_CODE },
  { name: 'neither delay nor at', call: schedule({ payload: 'changed' } as unknown as ScheduleOptions), error: InvalidScheduleOptionsError, code: OPTIONS_CODE },
  { name: 'unknown ifExists', call: schedule({ delay: 100, ifExists: 'merge' as unknown as IfExists }), error: InvalidScheduleOptionsError, code: OPTIONS_CODE },
  { name: 'BigInt payload', call: schedule({ delay: 100, payload: { amount: BigInt(10) } }), error: PayloadNotSerializableError, code: 'ERR_DELAY_PAYLOAD_NOT_SERIALIZABLE' },
  { name: 'cyclic payload', call: schedule({ delay: 100, payload: cycle }), error: PayloadNotSerializableError, code: 'ERR_DELAY_PAYLOAD_NOT_SERIALIZABLE' },
  { name: 'payload with no JSON form', call: schedule({ delay: 100, payload: () => 1 }), error: PayloadNotSerializableError, code: 'ERR_DELAY_PAYLOAD_NOT_SERIALIZABLE' },
  {
    name: 'function nested in a payload object',
    call: schedule({ delay: 100, payload: { id: 1, f: () => 1 } }),
    error: PayloadNotSerializableError,
    code: PAYLOAD_CODE,
    message: 'Payload is not JSON-serialisable: property "f" is a function, which JSON would drop',
  },
  {
    name: 'symbol deep in a payload',
    call: schedule({ delay: 100, payload: { order: { lines: [{ sku: Symbol('x') }] } } }),
    error: PayloadNotSerializableError,
    code: PAYLOAD_CODE,
    message: 'Payload is not JSON-serialisable: property "sku" is a symbol, which JSON would drop',
  },
  {
    name: 'function in a payload array',
    call: schedule({ delay: 100, payload: [1, () => 2] }),
    error: PayloadNotSerializableError,
    code: PAYLOAD_CODE,
    message: 'Payload is not JSON-serialisable: element [1] is a function, which JSON would drop',
  },
  {
    name: 'function nested in a scheduleMany entry',
    call: (delay) => delay.scheduleMany(TOPIC.basic, [{ key: 'existing', delay: 100, payload: { f: () => 1 } }]),
    error: PayloadNotSerializableError,
    code: PAYLOAD_CODE,
    message: 'Payload is not JSON-serialisable: property "f" is a function, which JSON would drop',
  },
  {
    name: 'function nested in a collected item',
    call: (delay) => delay.collect(TOPIC.basic, 'batch', { f: () => 1 }, { window: 1_000 }),
    error: PayloadNotSerializableError,
    code: PAYLOAD_CODE,
    message: 'Payload is not JSON-serialisable: property "f" is a function, which JSON would drop',
  },
  {
    name: 'duration string without a unit',
    call: schedule({ delay: '30', payload: 'changed' }),
    error: InvalidDurationError,
    code: DURATION_CODE,
    message: 'Invalid duration "30": a number without a unit: write "30ms" or "30s" (or pass the number 30 for milliseconds)',
  },
  {
    name: 'reschedule with a duration string without a unit',
    call: (delay) => delay.reschedule(TOPIC.basic, 'existing', { delay: '45' }),
    error: InvalidDurationError,
    code: DURATION_CODE,
    message: 'Invalid duration "45": a number without a unit: write "45ms" or "45s" (or pass the number 45 for milliseconds)',
  },
  {
    name: 'collect window without a unit',
    call: (delay) => delay.collect(TOPIC.basic, 'batch', 1, { window: '3' }),
    error: InvalidDurationError,
    code: DURATION_CODE,
    message: 'Invalid duration "3": a number without a unit: write "3ms" or "3s" (or pass the number 3 for milliseconds)',
  },
  {
    name: 'maxWait without slide',
    call: (delay) => delay.collect(TOPIC.basic, 'batch', 1, { window: '1s', maxWait: '5s' }),
    error: InvalidScheduleOptionsError,
    code: OPTIONS_CODE,
    message: 'Invalid schedule options: maxWait bounds a sliding window: give slide: true with it, or leave it out',
  },
  {
    name: 'maxWait shorter than the window',
    call: (delay) => delay.collect(TOPIC.basic, 'batch', 1, { window: '5s', slide: true, maxWait: '1s' }),
    error: InvalidScheduleOptionsError,
    code: OPTIONS_CODE,
    message: 'Invalid schedule options: maxWait (1000 ms) is shorter than window (5000 ms): every batch would be due at maxWait and slide would do nothing',
  },
  {
    name: 'reschedule with a payload it would ignore',
    call: (delay) => delay.reschedule(TOPIC.basic, 'existing', { delay: 100, payload: 'changed' } as unknown as ScheduleOptions),
    error: InvalidScheduleOptionsError,
    code: OPTIONS_CODE,
    message: "Invalid schedule options: reschedule keeps the action's payload and takes only delay or at, got payload: use schedule to replace the action",
  },
  { name: 'payload over the size limit', call: schedule({ delay: 100, payload: 'x'.repeat(65_536) }), error: PayloadTooLargeError, code: 'ERR_DELAY_PAYLOAD_TOO_LARGE' },
  { name: 'reschedule to a garbage delay', call: (delay) => delay.reschedule(TOPIC.basic, 'existing', { delay: '5 parsecs' }), error: InvalidDurationError, code: DURATION_CODE },
  {
    name: 'reschedule far into the past',
    call: (delay, now) => delay.reschedule(TOPIC.basic, 'existing', { at: now - 2 * DAY }),
    error: DueTimeOutOfRangeError,
    code: RANGE_CODE,
    dueAt: (now) => now - 2 * DAY,
  },
  {
    name: 'reschedule beyond the horizon',
    call: (delay, now) => delay.reschedule(TOPIC.basic, 'existing', { at: now + 101 * YEAR }),
    error: DueTimeOutOfRangeError,
    code: RANGE_CODE,
    dueAt: (now) => now + 101 * YEAR,
  },
  { name: 'cancel with an empty key', call: (delay) => delay.cancel(TOPIC.basic, ''), error: InvalidKeyError, code: KEY_CODE },
  { name: 'get with a bad topic', call: (delay) => delay.get('', 'existing'), error: InvalidTopicError, code: TOPIC_CODE },
  { name: 'list with a bad page', call: (delay) => delay.list(TOPIC.basic, { offset: -1 }), error: InvalidPageError, code: PAGE_CODE },
  { name: 'list past the largest offset', call: (delay) => delay.list(TOPIC.basic, { offset: 2 ** 31 }), error: InvalidPageError, code: PAGE_CODE },
  { name: 'listDead past the largest offset', call: (delay) => delay.listDead(TOPIC.basic, { offset: 99_999_999_999 }), error: InvalidPageError, code: PAGE_CODE },
];

/** The same payloads on both drivers, and what JSON turns them into. */
/** `values` with `last` at `index`, leaving holes between. */
function sparse(values: unknown[], index: number, last: unknown): unknown[] {
  const array = [...values];
  array[index] = last;
  return array;
}

const ROUND_TRIPS: Array<{ readonly name: string; readonly payload: unknown; readonly received: unknown }> = [
  {
    name: 'an object with a Date, unicode, pipes, nesting, null, NaN and undefined',
    payload: { when: new Date(Date.UTC(2031, 4, 6, 7, 8, 9, 123)), n: 1.5, s: 'ü € 😀 | a|b', nested: { list: [1, null, true, 'x'] }, nothing: null, nan: NaN, dropped: undefined },
    received: { when: '2031-05-06T07:08:09.123Z', n: 1.5, s: 'ü € 😀 | a|b', nested: { list: [1, null, true, 'x'] }, nothing: null, nan: null },
  },
  { name: 'undefined in an array (null, as JSON writes it)', payload: [1, undefined, { gone: undefined }], received: [1, null, {}] },
  { name: 'plain nested data', payload: { order: { id: 'o-1', lines: [{ sku: 'A', qty: 2 }], paid: false, note: null } }, received: { order: { id: 'o-1', lines: [{ sku: 'A', qty: 2 }], paid: false, note: null } } },
  { name: '-0, an infinity and a hole in an array', payload: sparse([-0, Infinity], 3, 'end'), received: [0, null, null, 'end'] },
  { name: 'an object without a prototype', payload: Object.assign(Object.create(null) as object, { id: 7 }), received: { id: 7 } },
  { name: 'a Date alone', payload: new Date(Date.UTC(2030, 0, 2)), received: '2030-01-02T00:00:00.000Z' },
  { name: 'a string', payload: 'plain text', received: 'plain text' },
  { name: 'an empty string', payload: '', received: '' },
  { name: 'zero', payload: 0, received: 0 },
  { name: 'false', payload: false, received: false },
  { name: 'null', payload: null, received: null },
  { name: 'an empty array', payload: [], received: [] },
  { name: 'no payload', payload: undefined, received: undefined },
];

describe.each(conformanceDrivers())('conformance: inputs on the $name driver', (fx) => {
  let t: Booted;

  // Starting a local Redis Cluster takes a few seconds.
  beforeAll(() => fx.start(), 60_000);
  afterAll(() => fx.stop());
  beforeEach(async () => {
    t = await fx.boot();
  });
  afterEach(() => fx.shutdown());

  it.each(BAD_INPUTS)('rejects $name with $code and changes nothing', async ({ call, error, code, dueAt, message }) => {
    await t.delay.schedule(TOPIC.basic, 'existing', { delay: 60_000, payload: { v: 1 } });
    const before = await t.delay.list(TOPIC.basic);

    const now = fx.now();
    const rejection = call(t.delay, now);
    await expect(rejection).rejects.toBeInstanceOf(error);
    await expect(rejection).rejects.toMatchObject({ code, name: error.name });
    if (dueAt) await expect(rejection).rejects.toMatchObject({ dueAt: dueAt(now) });
    if (message) await expect(rejection).rejects.toMatchObject({ message });

    expect(await t.delay.list(TOPIC.basic)).toEqual(before);
    expect(await t.delay.count(TOPIC.basic)).toBe(1);
    expect(await t.delay.get(TOPIC.basic, 'existing')).toEqual(before.items[0]);
    expect(await t.delay.count(TOPIC.retry)).toBe(0);
    // No batch was opened by a refused collect.
    expect(await t.delay.get(TOPIC.basic, 'batch')).toBeNull();
  });

  it('returns a plain payload as given, without parsing back the JSON it has just written', async () => {
    const payload = { order: { id: 'o-9', lines: [{ sku: 'B', qty: 1 }] } };
    const pending = await t.delay.schedule(TOPIC.basic, 'as-given', { delay: 60_000, payload });
    expect(pending.payload).toBe(payload);
    const [many] = await t.delay.scheduleMany(TOPIC.basic, [{ key: 'as-given-2', delay: 60_000, payload }]);
    expect(many.payload).toBe(payload);
    // What was stored is an equal copy, and a kept arming is read back from the store.
    expect((await t.delay.get(TOPIC.basic, 'as-given'))?.payload).toStrictEqual(payload);
    const kept = await t.delay.schedule(TOPIC.basic, 'as-given', { delay: 1_000, payload, ifExists: 'keep' });
    expect(kept.payload).not.toBe(payload);
    expect(kept.payload).toStrictEqual(payload);
  });

  it('every payload round-trips as JSON: the same on schedule, get, list and in the handler', async () => {
    // Far enough that none starts running before the listing below, however slow the machine is (it would be listed first).
    const at = fx.now() + 3_000;
    // Listed by due time, then key: keys that sort in the table's order.
    const keyOf = (n: number): string => `p${String(n).padStart(2, '0')}`;
    for (const [n, { payload, received }] of ROUND_TRIPS.entries()) {
      const pending = await t.delay.schedule(TOPIC.basic, keyOf(n), { at, payload });
      expect(pending.payload).toStrictEqual(received);
      expect((await t.delay.get(TOPIC.basic, keyOf(n)))?.payload).toStrictEqual(received);
    }
    const listed = await t.delay.list(TOPIC.basic);
    expect(listed.items.map((action) => action.payload)).toStrictEqual(ROUND_TRIPS.map(({ received }) => received));

    await fx.waitFor(() => t.probe.calls.length === ROUND_TRIPS.length, 'every run', at - fx.now() + fx.latenessMs);
    const byKey = new Map(t.probe.calls.map((call) => [call.key, call.payload]));
    ROUND_TRIPS.forEach(({ name, received }, n) => {
      expect({ name, payload: byKey.get(keyOf(n)) }).toStrictEqual({ name, payload: received });
    });
  });
});
