import { DelayEvent } from 'nestjs-delay';
import { Subscription } from 'rxjs';
import { Booted, conformanceDrivers } from './support/driver-fixture';
import { Call, LIMITED_CONCURRENCY, RETRY_ATTEMPTS, RETRY_BACKOFF_MS, TOPIC } from './support/probe';

/**
 * Conformance, part 2: what happens around handlers. Failures, backoff, the
 * dead set and re-driving; re-arming and cancelling while a handler runs;
 * the per-topic concurrency bound; the events$ stream.
 */
describe.each(conformanceDrivers())('conformance: handlers on the $name driver', (fx) => {
  let t: Booted;
  let subscription: Subscription | undefined;

  // Starting a local Redis Cluster takes a few seconds.
  beforeAll(() => fx.start(), 60_000);
  afterAll(() => fx.stop());
  beforeEach(async () => {
    t = await fx.boot();
  });
  afterEach(async () => {
    subscription?.unsubscribe();
    subscription = undefined;
    await fx.shutdown();
  });

  function record(topic: string, key: string): DelayEvent[] {
    const events: DelayEvent[] = [];
    subscription = t.delay.events$.subscribe((event) => {
      if (event.topic === topic && event.key === key) events.push(event);
    });
    return events;
  }

  const fail = (call: Call): never => {
    throw new Error(`boom ü 😀 #${call.attempt}`);
  };

  it('retries a failing handler with backoff, then moves it to the dead set; redrive runs it again from attempt 1', async () => {
    t.probe.when(TOPIC.retry, 'r1', fail);
    const pending = await t.delay.schedule(TOPIC.retry, 'r1', { delay: 50, payload: { order: 7, note: 'a|b' } });

    await fx.waitFor(async () => (await t.delay.countDead(TOPIC.retry)) === 1, 'the action to die', 50 + 3 * RETRY_BACKOFF_MS + 4 * fx.latenessMs);
    const calls = t.probe.callsOf(TOPIC.retry, 'r1');
    expect(calls.map((call) => [call.attempt, call.payload])).toEqual([
      [1, { order: 7, note: 'a|b' }],
      [2, { order: 7, note: 'a|b' }],
      [3, { order: 7, note: 'a|b' }],
    ]);
    expect(calls[0].dueAt).toBe(pending.dueAt.getTime());
    for (const call of calls) expect(call.firedAt).toBeGreaterThanOrEqual(call.dueAt);
    // Exponential: 40 ms before the second attempt, 80 ms before the third.
    expect(calls[1].dueAt - calls[0].firedAt).toBeGreaterThanOrEqual(RETRY_BACKOFF_MS);
    expect(calls[2].dueAt - calls[1].firedAt).toBeGreaterThanOrEqual(2 * RETRY_BACKOFF_MS);

    expect(await t.delay.count(TOPIC.retry)).toBe(0);
    expect(await t.delay.get(TOPIC.retry, 'r1')).toBeNull();
    const dead = await t.delay.listDead(TOPIC.retry);
    expect(dead).toMatchObject({ total: 1, offset: 0, limit: 100 });
    expect(dead.items).toHaveLength(1);
    expect(dead.items[0]).toMatchObject({
      topic: TOPIC.retry,
      key: 'r1',
      payload: { order: 7, note: 'a|b' },
      attempts: RETRY_ATTEMPTS,
      error: 'boom ü 😀 #3',
    });
    expect(dead.items[0].dueAt.getTime()).toBe(calls[2].dueAt);
    expect(dead.items[0].diedAt.getTime()).toBeGreaterThanOrEqual(calls[2].firedAt);
    expect(await t.delay.countDead(TOPIC.basic)).toBe(0);

    await fx.elapse(300);
    expect(t.probe.callsOf(TOPIC.retry, 'r1')).toHaveLength(3);

    t.probe.when(TOPIC.retry, 'r1', () => undefined);
    expect(await t.delay.redrive(TOPIC.retry, 'r1')).toBe(true);
    expect(await t.delay.countDead(TOPIC.retry)).toBe(0);
    await fx.waitFor(async () => t.probe.settledOf(TOPIC.retry, 'r1').length === 4 && (await t.delay.count(TOPIC.retry)) === 0, 'the re-driven run', fx.latenessMs);
    const redriven = t.probe.callsOf(TOPIC.retry, 'r1')[3];
    expect([redriven.attempt, redriven.payload]).toEqual([1, { order: 7, note: 'a|b' }]);
    expect(t.probe.settledOf(TOPIC.retry, 'r1')[3].outcome).toBe('resolved');

    expect(await t.delay.listDead(TOPIC.retry)).toEqual({ items: [], total: 0, offset: 0, limit: 100 });
    expect(await t.delay.redrive(TOPIC.retry, 'r1')).toBe(false);
    expect(await t.delay.redrive(TOPIC.retry, 'never-died')).toBe(false);
  });

  it('an action re-armed while its handler runs survives that handler finishing, and fires again with the new payload', async () => {
    const gate = t.probe.gate();
    t.probe.when(TOPIC.basic, 'user-9', (call) => (call.payload === 'v1' ? gate.opened : undefined));
    await t.delay.schedule(TOPIC.basic, 'user-9', { delay: 50, payload: 'v1' });
    await fx.waitFor(() => t.probe.runningOf(TOPIC.basic) === 1, 'the first run', 50 + fx.latenessMs);
    expect(await t.delay.get(TOPIC.basic, 'user-9')).toMatchObject({ payload: 'v1', state: 'running' });

    // 'keep' sees the running action and leaves it alone.
    expect(await t.delay.schedule(TOPIC.basic, 'user-9', { delay: 100, payload: 'ignored', ifExists: 'keep' })).toMatchObject({ payload: 'v1', state: 'running' });
    const rearmed = await t.delay.schedule(TOPIC.basic, 'user-9', { delay: 300, payload: 'v2' });
    expect(rearmed).toMatchObject({ payload: 'v2', state: 'waiting', attempt: 1 });

    gate.open();
    await fx.waitFor(() => t.probe.settledOf(TOPIC.basic, 'user-9').length === 1, 'the first run to finish');
    await fx.pause(20);
    expect(await t.delay.get(TOPIC.basic, 'user-9')).toEqual(rearmed);
    expect(await t.delay.count(TOPIC.basic)).toBe(1);

    await fx.waitFor(() => t.probe.calls.length === 2, 'the re-armed run', rearmed.dueAt.getTime() - fx.now() + fx.latenessMs);
    await fx.waitFor(async () => (await t.delay.count(TOPIC.basic)) === 0, 'its ack');
    await fx.elapse(100);
    expect(t.probe.calls.map((call) => [call.payload, call.attempt])).toEqual([
      ['v1', 1],
      ['v2', 1],
    ]);
    expect(t.probe.calls[1].dueAt).toBe(rearmed.dueAt.getTime());
  });

  it('an action rescheduled while its handler runs keeps its payload and attempt, and fires again at the new time', async () => {
    const gate = t.probe.gate();
    t.probe.when(TOPIC.retry, 'order-6', async (call) => {
      if (call.attempt === 1) fail(call);
      if (t.probe.callsOf(TOPIC.retry, 'order-6').length === 2) await gate.opened;
    });
    await t.delay.schedule(TOPIC.retry, 'order-6', { delay: 20, payload: { n: 6 } });
    await fx.waitFor(() => t.probe.runningOf(TOPIC.retry) === 1 && t.probe.calls.length === 2, 'the second attempt', 20 + RETRY_BACKOFF_MS + 2 * fx.latenessMs);

    const moved = await t.delay.reschedule(TOPIC.retry, 'order-6', { delay: 250 });
    expect(moved).toMatchObject({ payload: { n: 6 }, attempt: 2, state: 'waiting' });
    gate.open();
    await fx.waitFor(() => t.probe.settledOf(TOPIC.retry, 'order-6').length === 2, 'the second attempt to finish');
    await fx.pause(20);
    expect(await t.delay.get(TOPIC.retry, 'order-6')).toEqual(moved);

    await fx.waitFor(() => t.probe.calls.length === 3, 'the moved run', (moved?.dueAt.getTime() ?? 0) - fx.now() + fx.latenessMs);
    await fx.waitFor(async () => (await t.delay.count(TOPIC.retry)) === 0, 'its ack');
    expect(t.probe.calls.map((call) => [call.attempt, call.payload])).toEqual([
      [1, { n: 6 }],
      [2, { n: 6 }],
      [2, { n: 6 }],
    ]);
    expect(t.probe.calls[2].dueAt).toBe(moved?.dueAt.getTime());
  });

  it('redrive replaces an action pending under the same key', async () => {
    t.probe.when(TOPIC.retry, 'k', (call) => (call.payload === 'doomed' ? fail(call) : undefined));
    await t.delay.schedule(TOPIC.retry, 'k', { delay: 10, payload: 'doomed' });
    await fx.waitFor(async () => (await t.delay.countDead(TOPIC.retry)) === 1, 'the action to die', 10 + 3 * RETRY_BACKOFF_MS + 4 * fx.latenessMs);
    await t.delay.schedule(TOPIC.retry, 'k', { delay: 60_000, payload: 'newer' });

    t.probe.when(TOPIC.retry, 'k', () => undefined);
    expect(await t.delay.redrive(TOPIC.retry, 'k')).toBe(true);
    // Due now, the re-driven action may already have run on a busy machine: then what ran (below), and that nothing
    // is left under the key, show the same replacement.
    const pending = await t.delay.get(TOPIC.retry, 'k');
    if (pending !== null) expect(pending).toMatchObject({ payload: 'doomed', attempt: 1 });
    await fx.waitFor(async () => (await t.delay.count(TOPIC.retry)) === 0, 'the re-driven run', fx.latenessMs);
    expect(t.probe.calls.slice(3).map((call) => [call.payload, call.attempt])).toEqual([['doomed', 1]]);
  });

  it('an action cancelled while its handler runs is not retried when that handler then throws', async () => {
    const gate = t.probe.gate();
    t.probe.when(TOPIC.retry, 'order-5', async (call) => {
      await gate.opened;
      fail(call);
    });
    await t.delay.schedule(TOPIC.retry, 'order-5', { delay: 50, payload: 'p' });
    await fx.waitFor(() => t.probe.runningOf(TOPIC.retry) === 1, 'the run', 50 + fx.latenessMs);

    expect(await t.delay.cancel(TOPIC.retry, 'order-5')).toBe(true);
    expect(await t.delay.get(TOPIC.retry, 'order-5')).toBeNull();
    expect(await t.delay.count(TOPIC.retry)).toBe(0);

    gate.open();
    await fx.waitFor(() => t.probe.settledOf(TOPIC.retry, 'order-5').length === 1, 'the run to throw');
    await fx.elapse(6 * RETRY_BACKOFF_MS);
    expect(t.probe.settledOf(TOPIC.retry, 'order-5').map((call) => [call.attempt, call.outcome])).toEqual([[1, 'threw']]);
    expect(await t.delay.count(TOPIC.retry)).toBe(0);
    expect(await t.delay.countDead(TOPIC.retry)).toBe(0);
    expect(await t.delay.cancel(TOPIC.retry, 'order-5')).toBe(false);
  });

  it('never runs more handlers of a topic at once than its concurrency', async () => {
    const keys = ['k1', 'k2', 'k3', 'k4', 'k5'];
    const gates = keys.map(() => t.probe.gate());
    keys.forEach((key, n) => t.probe.when(TOPIC.limited, key, () => gates[n].opened));
    const at = fx.now() + 50;
    for (const key of keys) await t.delay.schedule(TOPIC.limited, key, { at });

    await fx.waitFor(() => t.probe.runningOf(TOPIC.limited) === LIMITED_CONCURRENCY, 'the first two runs', 50 + fx.latenessMs);
    await fx.pause(100);
    expect(t.probe.calls).toHaveLength(LIMITED_CONCURRENCY);
    expect(await t.delay.count(TOPIC.limited)).toBe(keys.length);
    expect((await t.delay.list(TOPIC.limited)).items.map((action) => action.state)).toEqual(['running', 'running', 'waiting', 'waiting', 'waiting']);

    // Free one slot at a time: exactly one more run starts each time.
    for (let started = LIMITED_CONCURRENCY; started < keys.length; started++) {
      gates[keys.indexOf(t.probe.calls[started - LIMITED_CONCURRENCY].key)].open();
      await fx.waitFor(() => t.probe.calls.length === started + 1, `run ${started + 1}`);
      await fx.pause(20);
      expect(t.probe.calls).toHaveLength(started + 1);
      expect(t.probe.runningOf(TOPIC.limited)).toBe(LIMITED_CONCURRENCY);
    }
    t.probe.openAllGates();
    await fx.waitFor(async () => (await t.delay.count(TOPIC.limited)) === 0, 'every run to finish');
    expect(t.probe.calls.map((call) => call.key).sort()).toEqual(keys);
    expect(t.probe.maxRunning.get(TOPIC.limited)).toBe(LIMITED_CONCURRENCY);
  });

  it('events$: scheduled, fired, completed for a success', async () => {
    const events = record(TOPIC.basic, 'ok');
    const pending = await t.delay.schedule(TOPIC.basic, 'ok', { delay: 50 });
    await fx.waitFor(() => events.some((event) => event.type === 'completed'), 'completed', 50 + fx.latenessMs);
    await fx.elapse(100);

    const dueAt = pending.dueAt;
    expect(events.map(({ type, attempt, dueAt: eventDueAt, error }) => ({ type, attempt, dueAt: eventDueAt, error }))).toEqual([
      { type: 'scheduled', attempt: 1, dueAt, error: undefined },
      { type: 'fired', attempt: 1, dueAt, error: undefined },
      { type: 'completed', attempt: 1, dueAt: undefined, error: undefined },
    ]);
    for (const event of events) expect(event.at).toBeInstanceOf(Date);
  });

  it('events$: failed and retrying per failed attempt, then dead; rescheduled, cancelled and redriven', async () => {
    t.probe.when(TOPIC.retry, 'bad', fail);
    const events = record(TOPIC.retry, 'bad');
    await t.delay.schedule(TOPIC.retry, 'bad', { delay: 60_000 });
    await t.delay.reschedule(TOPIC.retry, 'bad', { delay: 50 });
    await fx.waitFor(() => events.some((event) => event.type === 'dead'), 'dead', 50 + 3 * RETRY_BACKOFF_MS + 4 * fx.latenessMs);

    expect(events.map(({ type, attempt, error }) => ({ type, attempt, error }))).toEqual([
      { type: 'scheduled', attempt: 1, error: undefined },
      { type: 'rescheduled', attempt: undefined, error: undefined },
      { type: 'fired', attempt: 1, error: undefined },
      { type: 'failed', attempt: 1, error: 'boom ü 😀 #1' },
      { type: 'retrying', attempt: 1, error: 'boom ü 😀 #1' },
      { type: 'fired', attempt: 2, error: undefined },
      { type: 'failed', attempt: 2, error: 'boom ü 😀 #2' },
      { type: 'retrying', attempt: 2, error: 'boom ü 😀 #2' },
      { type: 'fired', attempt: 3, error: undefined },
      { type: 'failed', attempt: 3, error: 'boom ü 😀 #3' },
      { type: 'dead', attempt: 3, error: 'boom ü 😀 #3' },
    ]);
    const retrying = events.filter((event) => event.type === 'retrying');
    const fired = events.filter((event) => event.type === 'fired');
    for (const [n, event] of retrying.entries()) {
      // retryAt is announced (on this process's clock) before the driver files the retry (on the store's, a round trip
      // later): the due time may be a tick earlier, or later by as much as a busy machine delays that round trip.
      const filedAfter = (fired[n + 1].dueAt?.getTime() ?? Infinity) - (event.retryAt?.getTime() ?? 0);
      expect(filedAfter).toBeGreaterThanOrEqual(-fx.latenessMs);
      expect(filedAfter).toBeLessThanOrEqual(fx.onTimeMs);
    }

    events.length = 0;
    t.probe.when(TOPIC.retry, 'bad', () => undefined);
    // The dead event is published as the driver is told, so on a store the action is filed a moment later.
    await fx.waitFor(async () => (await t.delay.countDead(TOPIC.retry)) === 1, 'the dead action filed', fx.latenessMs);
    expect(await t.delay.redrive(TOPIC.retry, 'bad')).toBe(true);
    await fx.waitFor(() => events.some((event) => event.type === 'completed'), 'the re-driven run', fx.latenessMs);
    await t.delay.schedule(TOPIC.retry, 'bad', { delay: 60_000 });
    expect(await t.delay.cancel(TOPIC.retry, 'bad')).toBe(true);
    // redriven is published once redrive returns; on a store the re-driven action is due at once, and another
    // connection may claim and run it before that reply is read: its run's events may come first.
    const types = events.map(({ type, attempt }) => [type, attempt]);
    expect(types.filter(([type]) => type !== 'redriven')).toEqual([
      ['fired', 1],
      ['completed', 1],
      ['scheduled', 1],
      ['cancelled', undefined],
    ]);
    const redriven = types.findIndex(([type]) => type === 'redriven');
    expect(types.filter(([type]) => type === 'redriven')).toEqual([['redriven', undefined]]);
    expect(redriven).toBeLessThan(types.findIndex(([type]) => type === 'scheduled'));
  });
});
