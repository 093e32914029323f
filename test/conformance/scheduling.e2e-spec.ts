import { Booted, conformanceDrivers } from './support/driver-fixture';
import { TOPIC } from './support/probe';

/**
 * Conformance, part 1: arming, re-arming, cancelling, moving and inspecting
 * actions. Every case runs on the wheel (virtual clock) and on Redis (real
 * time) and must read the same on both.
 */
describe.each(conformanceDrivers())('conformance: scheduling on the $name driver', (fx) => {
  let t: Booted;

  // Starting a local Redis Cluster takes a few seconds.
  beforeAll(() => fx.start(), 60_000);
  afterAll(() => fx.stop());
  beforeEach(async () => {
    t = await fx.boot();
  });
  afterEach(() => fx.shutdown());

  it('fires once, at or after the due time, with topic, key, payload, dueAt and attempt', async () => {
    const key = 'order:42|{tag} ü 😀';
    const before = fx.now();
    const pending = await t.delay.schedule(TOPIC.basic, key, { delay: 200, payload: { total: 12.5, lines: ['tea'] } });
    const after = fx.now();

    expect(pending).toEqual({ topic: TOPIC.basic, key, payload: { total: 12.5, lines: ['tea'] }, dueAt: expect.any(Date), attempt: 1, state: 'waiting', paused: false });
    const dueAt = pending.dueAt.getTime();
    expect(dueAt).toBeGreaterThanOrEqual(before + 200);
    expect(dueAt).toBeLessThanOrEqual(after + 200);
    expect(await t.delay.get(TOPIC.basic, key)).toEqual(pending);

    await fx.elapseTo(dueAt - fx.marginMs);
    // Nothing ran before its due time (on a busy machine the real-time fixtures may wake here after it: a run seen
    // since then is not early).
    expect(t.probe.calls.filter((call) => call.seenAt < call.dueAt)).toEqual([]);

    await fx.waitFor(() => t.probe.calls.length > 0, 'the first run', dueAt - fx.now() + fx.onTimeMs);
    await fx.waitFor(async () => (await t.delay.count(TOPIC.basic)) === 0, 'the ack');
    await fx.elapse(150);

    expect(t.probe.calls).toEqual([{ topic: TOPIC.basic, key, payload: { total: 12.5, lines: ['tea'] }, dueAt, firedAt: expect.any(Number), attempt: 1, seenAt: expect.any(Number) }]);
    const [call] = t.probe.calls;
    expect(call.firedAt).toBeGreaterThanOrEqual(dueAt);
    expect(call.seenAt).toBeGreaterThanOrEqual(dueAt);
    expect(call.firedAt - dueAt).toBeLessThanOrEqual(fx.onTimeMs);
    expect(await t.delay.get(TOPIC.basic, key)).toBeNull();
    expect(await t.delay.list(TOPIC.basic)).toEqual({ items: [], total: 0, offset: 0, limit: 100 });
  });

  it('scheduleMany arms every entry as schedule would, and fires each once', async () => {
    await t.delay.schedule(TOPIC.basic, 'kept', { delay: 150, payload: { old: true } });
    const pending = await t.delay.scheduleMany(TOPIC.basic, [
      { key: 'a', delay: 100, payload: { n: 1 } },
      { key: 'b', delay: 150 },
      { key: 'kept', delay: 100, payload: { old: false }, ifExists: 'keep' },
    ]);
    expect(pending.map((action) => [action.key, action.payload, action.state])).toEqual([
      ['a', { n: 1 }, 'waiting'],
      ['b', undefined, 'waiting'],
      ['kept', { old: true }, 'waiting'],
    ]);
    expect(await t.delay.count(TOPIC.basic)).toBe(3);
    await fx.waitFor(() => t.probe.calls.length === 3, 'the three runs', 150 + fx.latenessMs);
    await fx.elapse(100);
    expect(t.probe.calls.map((call) => [call.key, call.payload]).sort()).toEqual([
      ['a', { n: 1 }],
      ['b', undefined],
      ['kept', { old: true }],
    ]);
  });

  it('scheduleMany is all or nothing: one refused entry and none is written', async () => {
    await t.delay.collect(TOPIC.basic, 'batch', 'item', { window: '1h' });
    const before = await t.delay.list(TOPIC.basic);
    await expect(t.delay.scheduleMany(TOPIC.basic, [{ key: 'x', delay: 100 }, { key: 'y', at: 0 }])).rejects.toMatchObject({ code: 'ERR_DELAY_DUE_TIME_OUT_OF_RANGE' });
    await expect(t.delay.scheduleMany(TOPIC.basic, [{ key: 'x', delay: 100 }, { key: 'y', delay: '200y' }])).rejects.toMatchObject({ code: 'ERR_DELAY_DUE_TIME_OUT_OF_RANGE' });
    await expect(t.delay.scheduleMany(TOPIC.basic, [{ key: 'x', delay: 100 }, { key: 'batch', delay: 100 }])).rejects.toMatchObject({ code: 'ERR_DELAY_KIND_CONFLICT' });
    await expect(t.delay.scheduleMany(TOPIC.basic, [{ key: 'x', delay: 100 }, { key: '', delay: 100 }])).rejects.toMatchObject({ code: 'ERR_DELAY_INVALID_KEY' });
    await expect(t.delay.scheduleMany(TOPIC.basic, [{ key: 'x', delay: 100, payload: 1n }])).rejects.toMatchObject({ code: 'ERR_DELAY_PAYLOAD_NOT_SERIALIZABLE' });
    await expect(t.delay.scheduleMany(TOPIC.basic, Array.from({ length: 1001 }, (_, n) => ({ key: `k${n}`, delay: 100 })))).rejects.toMatchObject({ code: 'ERR_DELAY_INVALID_SCHEDULE_OPTIONS' });
    expect(await t.delay.list(TOPIC.basic)).toEqual(before);
    expect(await t.delay.get(TOPIC.basic, 'x')).toBeNull();
  });

  it('schedule calls made together read as if made one after another: each its own outcome, a refusal refuses only its call', async () => {
    await t.delay.collect(TOPIC.basic, 'batch', 'item', { window: '1h' });
    // Made in one tick, none awaited before the next is made (on Redis they share one script call).
    const calls = [
      // Due times far enough ahead that the reads below come before any run, even on a busy machine.
      t.delay.schedule(TOPIC.basic, 'x', { delay: 1_000, payload: { v: 1 } }),
      t.delay.schedule(TOPIC.basic, 'x', { delay: 4_000, payload: { v: 2 }, ifExists: 'keep' }),
      t.delay.schedule(TOPIC.basic, 'old', { at: fx.now() - 2 * 86_400_000 }),
      t.delay.schedule(TOPIC.basic, 'batch', { delay: 100 }),
      t.delay.schedule(TOPIC.basic, 'gone', { delay: 1_000, payload: { v: 'gone' } }),
      t.delay.schedule(TOPIC.basic, 'x', { delay: 2_000, payload: { v: 3 } }),
      t.delay.schedule(TOPIC.basic, 'y', { delay: 2_000 }),
    ];
    const cancelled = t.delay.cancel(TOPIC.basic, 'gone');
    const settled = await Promise.allSettled(calls);
    expect(await cancelled).toBe(true);
    const outcome = (n: number): unknown => {
      const result = settled[n];
      return result.status === 'fulfilled' ? [result.value.key, result.value.payload] : (result.reason as { code?: string }).code;
    };
    expect(settled.map((_, n) => outcome(n))).toEqual([
      ['x', { v: 1 }],
      ['x', { v: 1 }],
      'ERR_DELAY_DUE_TIME_OUT_OF_RANGE',
      'ERR_DELAY_KIND_CONFLICT',
      ['gone', { v: 'gone' }],
      ['x', { v: 3 }],
      ['y', undefined],
    ]);
    const last = settled[5].status === 'fulfilled' ? settled[5].value : undefined;
    expect(await t.delay.get(TOPIC.basic, 'x')).toEqual(last);
    expect(await t.delay.get(TOPIC.basic, 'old')).toBeNull();
    expect(await t.delay.get(TOPIC.basic, 'gone')).toBeNull();
    // The batch, x and y.
    expect(await t.delay.count(TOPIC.basic)).toBe(3);

    await fx.waitFor(() => t.probe.calls.length >= 2, 'the runs of x and y', 2_000 + fx.latenessMs + 100);
    await fx.elapse(400);
    expect(t.probe.calls.map((call) => [call.key, call.payload]).sort()).toEqual([
      ['x', { v: 3 }],
      ['y', undefined],
    ]);
  });

  it("ifExists 'replace' (the default) re-arms with the new time and payload; the old arming never fires", async () => {
    const first = await t.delay.schedule(TOPIC.basic, 'user-1', { delay: 100, payload: { beat: 1 } });
    const second = await t.delay.schedule(TOPIC.basic, 'user-1', { delay: 300, payload: { beat: 2 } });
    const third = await t.delay.schedule(TOPIC.basic, 'user-1', { delay: 250, payload: { beat: 3 }, ifExists: 'replace' });

    expect(second.dueAt.getTime()).toBeGreaterThan(first.dueAt.getTime() + 150);
    expect(third).toMatchObject({ payload: { beat: 3 }, attempt: 1, state: 'waiting' });
    expect(third.dueAt.getTime()).toBeGreaterThan(first.dueAt.getTime() + 100);
    expect(await t.delay.count(TOPIC.basic)).toBe(1);
    expect(await t.delay.get(TOPIC.basic, 'user-1')).toEqual(third);

    await fx.elapseTo(first.dueAt.getTime() + 50);
    expect(t.probe.calls).toEqual([]);

    await fx.waitFor(() => t.probe.calls.length > 0, 'the re-armed run', third.dueAt.getTime() - fx.now() + fx.latenessMs);
    await fx.elapse(150);
    expect(t.probe.calls.map((call) => [call.payload, call.dueAt])).toEqual([[{ beat: 3 }, third.dueAt.getTime()]]);
    expect(t.probe.calls[0].firedAt).toBeGreaterThanOrEqual(third.dueAt.getTime());
  });

  it("ifExists 'keep' leaves an existing action untouched and returns it", async () => {
    const existing = await t.delay.schedule(TOPIC.basic, 'order-7', { delay: 150, payload: { v: 'first' } });
    const kept = await t.delay.schedule(TOPIC.basic, 'order-7', { delay: 400, payload: { v: 'second' }, ifExists: 'keep' });

    expect(kept).toEqual(existing);
    expect(await t.delay.get(TOPIC.basic, 'order-7')).toEqual(existing);

    const created = await t.delay.schedule(TOPIC.basic, 'order-8', { delay: 150, payload: { v: 'new' }, ifExists: 'keep' });
    expect(created).toMatchObject({ key: 'order-8', payload: { v: 'new' }, state: 'waiting' });

    await fx.waitFor(() => t.probe.calls.length >= 2, 'both runs', existing.dueAt.getTime() - fx.now() + fx.latenessMs);
    await fx.elapse(400);
    expect(t.probe.callsOf(TOPIC.basic, 'order-7').map((call) => [call.payload, call.dueAt])).toEqual([[{ v: 'first' }, existing.dueAt.getTime()]]);
    expect(t.probe.callsOf(TOPIC.basic, 'order-8')).toHaveLength(1);
  });

  it('cancel before the due time: returns true and the action never fires', async () => {
    // A second ahead: with 100 ms, a busy machine (load 13, two suites at once) took longer than that to make the
    // calls below, and order-1 fell due and ran before the cancel was sent.
    const pending = await t.delay.schedule(TOPIC.basic, 'order-1', { delay: 1_000, payload: 'x' });
    await t.delay.schedule(TOPIC.basic, 'order-2', { delay: 1_000 });

    expect(await t.delay.cancel(TOPIC.basic, 'order-1')).toBe(true);
    expect(await t.delay.get(TOPIC.basic, 'order-1')).toBeNull();
    expect(await t.delay.count(TOPIC.basic)).toBe(1);

    await fx.waitFor(() => t.probe.calls.length > 0, 'the run that was not cancelled', pending.dueAt.getTime() - fx.now() + fx.latenessMs);
    await fx.elapse(150);
    expect(t.probe.calls.map((call) => call.key)).toEqual(['order-2']);
    expect(await t.delay.cancel(TOPIC.basic, 'order-1')).toBe(false);
  });

  it('cancel of nothing returns false: never scheduled, other topic, already fired', async () => {
    expect(await t.delay.cancel(TOPIC.basic, 'nobody')).toBe(false);
    await t.delay.schedule(TOPIC.basic, 'k', { delay: 50 });
    expect(await t.delay.cancel(TOPIC.retry, 'k')).toBe(false);
    await fx.waitFor(async () => t.probe.calls.length === 1 && (await t.delay.count(TOPIC.basic)) === 0, 'the run and its ack', 50 + fx.latenessMs);
    expect(await t.delay.cancel(TOPIC.basic, 'k')).toBe(false);
  });

  it('reschedule moves the action and keeps its payload; null for an unknown action', async () => {
    const original = await t.delay.schedule(TOPIC.basic, 'order-3', { delay: 100, payload: { total: 3 } });
    const later = await t.delay.reschedule(TOPIC.basic, 'order-3', { delay: 350 });

    expect(later).toEqual({ ...original, dueAt: expect.any(Date) });
    const laterAt = (later?.dueAt ?? new Date(0)).getTime();
    expect(laterAt).toBeGreaterThanOrEqual(original.dueAt.getTime() + 200);
    expect(await t.delay.get(TOPIC.basic, 'order-3')).toEqual(later);
    expect(await t.delay.count(TOPIC.basic)).toBe(1);

    await fx.elapseTo(original.dueAt.getTime() + 50);
    expect(t.probe.calls).toEqual([]);

    const earlier = await t.delay.reschedule(TOPIC.basic, 'order-3', { at: laterAt - 100 });
    expect(earlier?.dueAt.getTime()).toBe(laterAt - 100);
    expect(earlier?.payload).toEqual({ total: 3 });

    await fx.waitFor(() => t.probe.calls.length > 0, 'the moved run', laterAt - 100 - fx.now() + fx.latenessMs);
    await fx.elapse(200);
    expect(t.probe.calls.map((call) => [call.key, call.payload, call.dueAt, call.attempt])).toEqual([['order-3', { total: 3 }, laterAt - 100, 1]]);

    expect(await t.delay.reschedule(TOPIC.basic, 'order-3', { delay: 100 })).toBeNull();
    expect(await t.delay.reschedule(TOPIC.basic, 'never', { delay: 100 })).toBeNull();
    expect(await t.delay.count(TOPIC.basic)).toBe(0);
  });

  it('get, list and count: ordered by due time then key, paginated, per topic', async () => {
    const base = fx.now() + 60_000;
    await t.delay.schedule(TOPIC.basic, 'd', { at: base + 300, payload: 4 });
    await t.delay.schedule(TOPIC.basic, 'b', { at: base + 200, payload: 2 });
    await t.delay.schedule(TOPIC.basic, 'c', { at: base + 100, payload: 3 });
    await t.delay.schedule(TOPIC.basic, 'a', { at: base + 200, payload: 1 });
    await t.delay.schedule(TOPIC.retry, 'elsewhere', { at: base });

    const all = await t.delay.list(TOPIC.basic);
    expect(all.total).toBe(4);
    expect(all.items.map((action) => [action.key, action.payload, action.dueAt.getTime() - base, action.state, action.attempt])).toEqual([
      ['c', 3, 100, 'waiting', 1],
      ['a', 1, 200, 'waiting', 1],
      ['b', 2, 200, 'waiting', 1],
      ['d', 4, 300, 'waiting', 1],
    ]);
    expect(await t.delay.list(TOPIC.basic, { offset: 1, limit: 2 })).toEqual({ items: all.items.slice(1, 3), total: 4, offset: 1, limit: 2 });
    expect((await t.delay.list(TOPIC.basic, { offset: 3, limit: 10 })).items.map((action) => action.key)).toEqual(['d']);
    expect(await t.delay.list(TOPIC.basic, { offset: 4 })).toEqual({ items: [], total: 4, offset: 4, limit: 100 });
    expect(await t.delay.count(TOPIC.basic)).toBe(4);
    expect(await t.delay.get(TOPIC.basic, 'a')).toEqual(all.items[1]);
    expect(await t.delay.get(TOPIC.basic, 'zz')).toBeNull();

    expect(await t.delay.count(TOPIC.retry)).toBe(1);
    expect((await t.delay.list(TOPIC.retry)).items.map((action) => action.key)).toEqual(['elsewhere']);
    expect(await t.delay.count(TOPIC.serial)).toBe(0);
    expect(await t.delay.list(TOPIC.serial)).toEqual({ items: [], total: 0, offset: 0, limit: 100 });
  });

  it('list puts running actions first, then waiting ones by due time; count includes running ones', async () => {
    const gate = t.probe.gate();
    t.probe.when(TOPIC.serial, 'running', () => gate.opened);
    const running = await t.delay.schedule(TOPIC.serial, 'running', { delay: 50, payload: 'r' });
    await fx.waitFor(() => t.probe.runningOf(TOPIC.serial) === 1, 'the held run', 50 + fx.latenessMs);

    // Due before the running one, but the topic's only handler slot is taken: they wait.
    const dueEarlier = running.dueAt.getTime() - 20;
    await t.delay.schedule(TOPIC.serial, 'y', { at: dueEarlier, payload: 'y' });
    await t.delay.schedule(TOPIC.serial, 'x', { at: dueEarlier, payload: 'x' });
    await t.delay.schedule(TOPIC.serial, 'late', { delay: 60_000 });
    await fx.pause(50);

    expect(t.probe.calls.map((call) => call.key)).toEqual(['running']);
    expect(await t.delay.get(TOPIC.serial, 'running')).toEqual({ ...running, state: 'running' });
    const page = await t.delay.list(TOPIC.serial);
    expect(page.items.map((action) => [action.key, action.state])).toEqual([
      ['running', 'running'],
      ['x', 'waiting'],
      ['y', 'waiting'],
      ['late', 'waiting'],
    ]);
    expect(page.total).toBe(4);
    expect(await t.delay.count(TOPIC.serial)).toBe(4);
    expect((await t.delay.list(TOPIC.serial, { offset: 0, limit: 1 })).items.map((action) => action.key)).toEqual(['running']);
    expect((await t.delay.list(TOPIC.serial, { offset: 1, limit: 2 })).items.map((action) => action.key)).toEqual(['x', 'y']);
    expect((await t.delay.list(TOPIC.serial, { offset: 3, limit: 2 })).items.map((action) => action.key)).toEqual(['late']);

    gate.open();
    await fx.waitFor(async () => (await t.delay.count(TOPIC.serial)) === 1, 'x and y to run once the slot frees');
    // Which of two actions due at the same time runs first is not part of the contract.
    expect(t.probe.calls.map((call) => call.key).sort()).toEqual(['running', 'x', 'y']);
    expect(t.probe.calls[0].key).toBe('running');
    expect(t.probe.maxRunning.get(TOPIC.serial)).toBe(1);
  });

  it('orders keys of the same due time by code point, whatever the characters', async () => {
    const at = fx.now() + 60_000;
    // UTF-16 order would put the emoji (a surrogate pair) before U+FF58; code point (and UTF-8 byte) order puts it after.
    const keys = ['b', 'é', 'a', '\uff58', '😀', 'A', 'a b', '{x}', ''.padEnd(3, 'z')];
    for (const key of keys) await t.delay.schedule(TOPIC.basic, key, { at });
    const expected = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    expect(expected.indexOf('\uff58')).toBeLessThan(expected.indexOf('😀'));
    expect((await t.delay.list(TOPIC.basic)).items.map((action) => action.key)).toEqual(expected);
    expect((await t.delay.list(TOPIC.basic, { offset: 4, limit: 3 })).items.map((action) => action.key)).toEqual(expected.slice(4, 7));
  });

  it('keeps an action of a topic no handler here consumes pending past its due time', async () => {
    const pending = await t.delay.schedule('conf.unhandled', 'k', { delay: 50, payload: 'p' });
    await fx.elapse(200);
    expect(await t.delay.get('conf.unhandled', 'k')).toEqual(pending);
    expect(await t.delay.count('conf.unhandled')).toBe(1);
    expect(t.probe.calls).toEqual([]);
  });

  it("'at' takes a Date or epoch ms and keeps it as the due time", async () => {
    const atDate = new Date(fx.now() + 150);
    const atMs = fx.now() + 120;
    const byDate = await t.delay.schedule(TOPIC.basic, 'by-date', { at: atDate, payload: 'date' });
    const byMs = await t.delay.schedule(TOPIC.basic, 'by-ms', { at: atMs, payload: 'ms' });

    expect(byDate.dueAt).toEqual(atDate);
    expect(byMs.dueAt.getTime()).toBe(atMs);

    await fx.elapseTo(atMs - fx.marginMs);
    expect(t.probe.calls.filter((call) => call.seenAt < call.dueAt)).toEqual([]);

    await fx.waitFor(() => t.probe.calls.length === 2, 'both runs', atDate.getTime() - fx.now() + fx.latenessMs);
    // Each with its own due time. Not in due order: on a busy machine the second schedule call can return after the
    // first action's due time, and that action rightly runs first (seen on PostgreSQL under load: the call that wrote
    // by-date took over 150 ms, so by-ms was written after by-date had fallen due and run).
    expect(new Map(t.probe.calls.map((call) => [call.key, call.dueAt]))).toEqual(
      new Map([
        ['by-ms', atMs],
        ['by-date', atDate.getTime()],
      ]),
    );
    for (const call of t.probe.calls) expect(call.firedAt).toBeGreaterThanOrEqual(call.dueAt);
  });

  it("'at' slightly in the past fires at once, keeping the given due time", async () => {
    const past = fx.now() - 500;
    const scheduledAt = fx.now();
    const pending = await t.delay.schedule(TOPIC.basic, 'late-order', { at: new Date(past), payload: 'p' });
    expect(pending.dueAt.getTime()).toBe(past);

    await fx.waitFor(() => t.probe.calls.length > 0, 'the overdue run', fx.onTimeMs);
    expect(t.probe.calls.map((call) => [call.key, call.dueAt, call.attempt])).toEqual([['late-order', past, 1]]);
    expect(t.probe.calls[0].firedAt - scheduledAt).toBeLessThanOrEqual(fx.onTimeMs);
  });
});
