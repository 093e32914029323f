import {
  ActionKindConflictError,
  BatchTooLargeError,
  DelayService,
  InvalidDurationError,
  InvalidKeyError,
  InvalidScheduleOptionsError,
  InvalidTopicError,
  PayloadNotSerializableError,
  PayloadTooLargeError,
} from 'nestjs-delay';
import { BATCH_TOPIC } from './support/batch-recorder';
import { BatchApp, batchDrivers, MAX_BATCH_BYTES, MAX_BATCH_ITEMS, MAX_ITEM_BYTES } from './support/batch-fixture';

const T = BATCH_TOPIC.plain;
/** The window of the refused calls. */
const WINDOW = 300;
/**
 * The window of the batch open before each case: longer than any case, so that what a case compares is never
 * changed by the batch closing on its own, however busy the machine. Each case ends by running it at once.
 */
const OPEN_WINDOW = '1h';

type CollectOptions = Parameters<DelayService['collect']>[3];

/** What a rejected call must leave as it was. */
async function state(delay: DelayService): Promise<unknown> {
  return {
    open: await delay.get(T, 'open'),
    single: await delay.get(T, 'single'),
    count: await delay.count(T),
    listed: await delay.list(T),
  };
}

describe.each(batchDrivers())('collect: bad input is refused and changes nothing ($name)', (fixture) => {
  let booted: BatchApp;
  let before: unknown;

  beforeAll(() => fixture.setup(), 60_000);
  afterAll(() => fixture.teardown());

  beforeEach(async () => {
    booted = await fixture.boot();
    const { delay } = booted;
    await delay.collect(T, 'open', { n: 1 }, { window: OPEN_WINDOW });
    await delay.collect(T, 'open', { n: 2 }, { window: OPEN_WINDOW });
    await delay.schedule(T, 'single', { delay: '1h', payload: { p: 1 } });
    before = await state(delay);
  });

  afterEach(() => fixture.shutdown());

  /** Nothing changed, no event claims otherwise, and the open batch is handed over with its own items only. */
  async function expectNothingChanged(collected = [1, 2]): Promise<void> {
    const { delay, recorder, events } = booted;
    expect(await state(delay)).toEqual(before);
    expect(events.filter((event) => event.type === 'collected').map((event) => event.size)).toEqual(collected);
    expect(recorder.runs).toEqual([]);
    expect(await delay.runNow(T, 'open')).toBe(true);
    await fixture.waitFor(() => recorder.runs.length > 0, 'the open batch', 10_000);
    await fixture.elapse(50);
    expect(recorder.runs.map((run) => [run.key, run.items])).toEqual([['open', [{ n: 1 }, { n: 2 }]]]);
  }

  it('an item larger than maxPayloadBytes (PayloadTooLargeError)', async () => {
    const { delay } = booted;
    // JSON adds the two quotes: one byte over the limit.
    const tooLarge = delay.collect(T, 'open', 'x'.repeat(MAX_ITEM_BYTES - 1), { window: WINDOW });
    await expect(tooLarge).rejects.toThrow(PayloadTooLargeError);
    await expect(tooLarge).rejects.toMatchObject({ code: 'ERR_DELAY_PAYLOAD_TOO_LARGE', bytes: MAX_ITEM_BYTES + 1, limit: MAX_ITEM_BYTES });
    // Bytes, not characters: 256 two-byte characters are over a 512-byte limit.
    await expect(delay.collect(T, 'open', 'é'.repeat(MAX_ITEM_BYTES / 2), { window: WINDOW })).rejects.toMatchObject({ code: 'ERR_DELAY_PAYLOAD_TOO_LARGE' });
    // A new key is not opened by a refused item either.
    await expect(delay.collect(T, 'other', { blob: 'y'.repeat(MAX_ITEM_BYTES) }, { window: WINDOW })).rejects.toThrow(PayloadTooLargeError);
    await expectNothingChanged();
  });

  it('an item that would take the open batch past maxBatchBytes (BatchTooLargeError)', async () => {
    const { delay } = booted;
    // A string of n characters is n + 2 bytes of JSON, plus its length prefix ("514:"): 518 bytes as stored.
    const big = 'b'.repeat(MAX_ITEM_BYTES - 2);
    await expect(delay.collect(T, 'full', big, { window: '1h' })).resolves.toMatchObject({ size: 1 });
    await delay.collect(T, 'full', big, { window: '1h' });
    await delay.collect(T, 'full', big, { window: '1h' });
    await delay.collect(T, 'full', big, { window: '1h' });
    const beforeFull = { batch: await delay.get(T, 'full'), count: await delay.count(T) };
    const refused = delay.collect(T, 'full', big, { window: '1h' });
    await expect(refused).rejects.toThrow(BatchTooLargeError);
    await expect(refused).rejects.toMatchObject({ code: 'ERR_DELAY_BATCH_TOO_LARGE', topic: T, key: 'full', bytes: 5 * (MAX_ITEM_BYTES + 4), limit: MAX_BATCH_BYTES });
    // A small item still fits; then nothing more.
    await expect(delay.collect(T, 'full', 1, { window: '1h' })).resolves.toMatchObject({ size: 5 });
    await expect(delay.collect(T, 'full', big, { window: '1h', slide: true })).rejects.toThrow(BatchTooLargeError);
    const after = await delay.get(T, 'full');
    expect(after?.items).toEqual([...((beforeFull.batch?.items ?? []) as unknown[]), 1]);
    expect(after?.dueAt).toEqual(beforeFull.batch?.dueAt);
    // The other batches were not touched.
    await expect(delay.cancel(T, 'full')).resolves.toBe(true);
    expect(beforeFull.count).toBe(3);
    await expectNothingChanged([1, 2, 1, 2, 3, 4, 5]);
  });

  it('an item JSON cannot represent (PayloadNotSerializableError)', async () => {
    const { delay } = booted;
    await expect(delay.collect(T, 'open', { amount: BigInt(10) }, { window: WINDOW })).rejects.toThrow(PayloadNotSerializableError);
    await expect(delay.collect(T, 'open', BigInt(1), { window: WINDOW })).rejects.toMatchObject({ code: 'ERR_DELAY_PAYLOAD_NOT_SERIALIZABLE' });
    const cycle: { self?: unknown } = {};
    cycle.self = cycle;
    await expect(delay.collect(T, 'open', cycle, { window: WINDOW })).rejects.toThrow(PayloadNotSerializableError);
    await expect(delay.collect(T, 'open', () => 1, { window: WINDOW })).rejects.toThrow(PayloadNotSerializableError);
    await expect(delay.collect(T, 'other', Symbol('s'), { window: WINDOW })).rejects.toThrow(PayloadNotSerializableError);
    await expectNothingChanged();
  });

  it('an undefined item, or no options (InvalidScheduleOptionsError)', async () => {
    const { delay } = booted;
    await expect(delay.collect(T, 'open', undefined, { window: WINDOW })).rejects.toThrow(InvalidScheduleOptionsError);
    await expect(delay.collect(T, 'open', undefined, { window: WINDOW })).rejects.toMatchObject({ code: 'ERR_DELAY_INVALID_SCHEDULE_OPTIONS' });
    await expect(delay.collect(T, 'open', { n: 3 }, undefined as unknown as CollectOptions)).rejects.toThrow(InvalidScheduleOptionsError);
    await expect(delay.collect(T, 'open', { n: 3 }, { window: WINDOW, slide: 'yes' } as unknown as CollectOptions)).rejects.toThrow(InvalidScheduleOptionsError);
    await expectNothingChanged();
  });

  it('maxItems above the module maxBatchItems, below 1 or not whole (InvalidScheduleOptionsError)', async () => {
    const { delay } = booted;
    for (const maxItems of [MAX_BATCH_ITEMS + 1, 0, -1, 2.5, Number.NaN]) {
      await expect(delay.collect(T, 'open', { n: 3 }, { window: WINDOW, maxItems })).rejects.toThrow(InvalidScheduleOptionsError);
    }
    await expect(delay.collect(T, 'open', { n: 3 }, { window: WINDOW, maxItems: 0 })).rejects.toMatchObject({ code: 'ERR_DELAY_INVALID_SCHEDULE_OPTIONS' });
    // With an open batch of 2, maxItems 1 would have flushed it: refused instead, so it did not.
    await expect(delay.collect(T, 'open', { n: 3 }, { window: WINDOW, maxItems: -5 })).rejects.toThrow(InvalidScheduleOptionsError);
    await expectNothingChanged();
  });

  it('a bad window or maxWait (InvalidDurationError)', async () => {
    const { delay } = booted;
    // 1e300 ms parses, but lies beyond the driver's horizon (it would wrap the wheel's tick arithmetic).
    for (const window of [-1, 'soon', Number.NaN, Number.POSITIVE_INFINITY, '-5s', '', 1e300, '200y']) {
      await expect(delay.collect(T, 'open', { n: 3 }, { window })).rejects.toThrow(InvalidDurationError);
    }
    await expect(delay.collect(T, 'open', { n: 3 }, {} as CollectOptions)).rejects.toThrow(InvalidDurationError);
    await expect(delay.collect(T, 'open', { n: 3 }, { window: 'soon' })).rejects.toMatchObject({ code: 'ERR_DELAY_INVALID_DURATION' });
    await expect(delay.collect(T, 'open', { n: 3 }, { window: WINDOW, slide: true, maxWait: 'later' })).rejects.toThrow(InvalidDurationError);
    await expect(delay.collect(T, 'open', { n: 3 }, { window: WINDOW, slide: true, maxWait: -10 })).rejects.toThrow(InvalidDurationError);
    await expectNothingChanged();
  });

  it('a bad topic or key', async () => {
    const { delay } = booted;
    await expect(delay.collect('', 'open', { n: 3 }, { window: WINDOW })).rejects.toThrow(InvalidTopicError);
    await expect(delay.collect('has space', 'open', { n: 3 }, { window: WINDOW })).rejects.toThrow(InvalidTopicError);
    await expect(delay.collect(T, '', { n: 3 }, { window: WINDOW })).rejects.toThrow(InvalidKeyError);
    await expect(delay.collect(T, 'k'.repeat(513), { n: 3 }, { window: WINDOW })).rejects.toThrow(InvalidKeyError);
    // U+001F is reserved: it joins a key and a token in a closed batch's id.
    await expect(delay.collect(T, 'open\u001fx', { n: 3 }, { window: WINDOW })).rejects.toThrow(InvalidKeyError);
    await expectNothingChanged();
  });

  it('collect on a key with a single action, schedule or reschedule on a key with an open batch (ActionKindConflictError)', async () => {
    const { delay } = booted;
    const onSingle = delay.collect(T, 'single', { n: 3 }, { window: WINDOW });
    await expect(onSingle).rejects.toThrow(ActionKindConflictError);
    await expect(onSingle).rejects.toMatchObject({ code: 'ERR_DELAY_KIND_CONFLICT', topic: T, key: 'single' });
    // Even one that would have filled a batch at once.
    await expect(delay.collect(T, 'single', { n: 3 }, { window: WINDOW, maxItems: 1 })).rejects.toThrow(ActionKindConflictError);

    const onBatch = delay.schedule(T, 'open', { delay: '1h', payload: { p: 2 } });
    await expect(onBatch).rejects.toThrow(ActionKindConflictError);
    await expect(onBatch).rejects.toMatchObject({ code: 'ERR_DELAY_KIND_CONFLICT', key: 'open' });
    await expect(delay.schedule(T, 'open', { delay: '1h', ifExists: 'keep' })).rejects.toMatchObject({ code: 'ERR_DELAY_KIND_CONFLICT' });
    await expect(delay.reschedule(T, 'open', { delay: '1h' })).rejects.toMatchObject({ code: 'ERR_DELAY_KIND_CONFLICT' });
    await expectNothingChanged();
  });
});
