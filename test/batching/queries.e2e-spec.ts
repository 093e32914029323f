import { LISTED_BATCH_ITEMS } from 'nestjs-delay';
import { BATCH_TOPIC } from './support/batch-recorder';
import { batchDrivers } from './support/batch-fixture';

const T = BATCH_TOPIC.plain;

describe.each(batchDrivers())('collect: cancel, get, list, count and events ($name)', (fixture) => {
  beforeAll(() => fixture.setup(), 60_000);
  afterAll(() => fixture.teardown());
  afterEach(() => fixture.shutdown());

  it('cancels an open batch: its items are never handed over, and the key starts afresh', async () => {
    const { delay, recorder, events } = await fixture.boot();
    // Long enough that the four awaited calls and the count come before the batches close, on a busy machine too.
    const window = 1_500;
    for (const item of ['c1', 'c2', 'c3']) await delay.collect(T, 'gone', item, { window });
    await delay.collect(T, 'kept', 'k1', { window });
    expect(await delay.count(T)).toBe(2);

    expect(await delay.cancel(T, 'gone')).toBe(true);
    expect(await delay.get(T, 'gone')).toBeNull();
    expect(await delay.count(T)).toBe(1);
    expect((await delay.list(T)).items.map((batch) => batch.key)).toEqual(['kept']);
    expect(await delay.cancel(T, 'gone')).toBe(false);
    expect(events.filter((event) => event.type === 'cancelled').map((event) => event.key)).toEqual(['gone']);

    await fixture.waitFor(() => recorder.runs.length === 1, 'the batch that was kept', 2 * window);
    await fixture.elapse(window);
    expect(recorder.runs.map((run) => [run.key, run.items])).toEqual([['kept', ['k1']]]);

    const again = await delay.collect(T, 'gone', 'c4', { window });
    expect([again.size, again.flushed]).toEqual([1, false]);
    await fixture.waitFor(() => recorder.runsOf(T, 'gone').length === 1, 'the new batch', 2 * window);
    expect(recorder.batchesOf(T, 'gone')).toEqual([['c4']]);
  });

  it('cancels only the open batch of a key whose previous batch is being handled', async () => {
    const { delay, recorder } = await fixture.boot();
    const latch = recorder.latch();
    recorder.react(T, 'busy', async (run) => {
      if (run.items[0] === 'first') await latch.released;
    });
    await delay.collect(T, 'busy', 'first', { window: 50 });
    await fixture.waitFor(() => recorder.runs.length === 1, 'the first batch starts', 400);
    // The running batch is closed: the key names no open batch.
    expect(await delay.cancel(T, 'busy')).toBe(false);
    await delay.collect(T, 'busy', 'second', { window: 50 });
    expect(await delay.cancel(T, 'busy')).toBe(true);
    expect(await delay.count(T)).toBe(1);
    latch.release();
    await fixture.waitFor(async () => (await delay.count(T)) === 0, 'the running batch completes', 400);
    await fixture.elapse(200);
    expect(recorder.batchesOf(T, 'busy')).toEqual([['first']]);
  });

  it('get, list and count report batches, open, full and running', async () => {
    const { delay, recorder } = await fixture.boot();
    expect(await delay.get(T, 'k1')).toBeNull();
    expect(await delay.count(T)).toBe(0);
    expect((await delay.list(T)).total).toBe(0);

    // Windows far longer than the case (a busy machine must not close them midway); the end runs them with runNow.
    const a = await delay.collect(T, 'k1', 'a1', { window: '1h' });
    await delay.collect(T, 'k1', { a: 2 }, { window: '1h' });
    const b = await delay.collect(T, 'k2', ['b', 1], { window: '50m' });
    expect(await delay.get(T, 'k1')).toEqual({ topic: T, key: 'k1', payload: undefined, items: ['a1', { a: 2 }], size: 2, dueAt: a.dueAt, attempt: 1, state: 'waiting', paused: false });
    expect(await delay.count(T)).toBe(2);
    const listed = await delay.list(T);
    expect(listed.total).toBe(2);
    expect(listed.items.map((batch) => [batch.key, batch.items, batch.dueAt])).toEqual([
      ['k2', [['b', 1]], b.dueAt],
      ['k1', ['a1', { a: 2 }], a.dueAt],
    ]);
    const second = await delay.list(T, { offset: 1, limit: 1 });
    expect([second.total, second.offset, second.limit, second.items.map((batch) => batch.key)]).toEqual([2, 1, 1, ['k1']]);

    // A full batch held by its handler still counts and lists, but get(key) sees the key's open batch.
    const latch = recorder.latch();
    recorder.react(T, 'k3', async (run) => {
      if (run.items.length === 3) await latch.released;
    });
    for (const n of [1, 2, 3]) await delay.collect(T, 'k3', n, { window: '1h', maxItems: 3 });
    await fixture.waitFor(() => recorder.runs.length === 1, 'the full batch starts', 2_000);
    expect(await delay.get(T, 'k3')).toBeNull();
    await delay.collect(T, 'k3', 4, { window: '2h', maxItems: 3 });
    expect((await delay.get(T, 'k3'))?.items).toEqual([4]);
    expect(await delay.count(T)).toBe(4);
    const all = await delay.list(T);
    expect(all.total).toBe(4);
    expect(all.items[0]).toMatchObject({ key: 'k3', items: [1, 2, 3], state: 'running' });
    expect(all.items.slice(1).map((batch) => [batch.key, batch.state])).toEqual([
      ['k2', 'waiting'],
      ['k1', 'waiting'],
      ['k3', 'waiting'],
    ]);

    latch.release();
    for (const key of ['k2', 'k1', 'k3']) expect(await delay.runNow(T, key)).toBe(true);
    await fixture.waitFor(async () => (await delay.count(T)) === 0, 'every batch handed over', 2_000);
    // The full batch first; the others once run now (in whatever order their equal due times give).
    expect(recorder.runs[0]).toMatchObject({ key: 'k3', items: [1, 2, 3] });
    expect(recorder.runs.slice(1).map((run) => JSON.stringify([run.key, run.items])).sort()).toEqual(
      [['k2', [['b', 1]]], ['k1', ['a1', { a: 2 }]], ['k3', [4]]].map((run) => JSON.stringify(run)).sort(),
    );
  });

  it('lists at most the first 10 items of a batch, with its size; get shows them all', async () => {
    const { delay, recorder } = await fixture.boot();
    const items = Array.from({ length: 25 }, (_, n) => ({ n, text: 'é'.repeat(n) }));
    // A window far longer than the case: 25 calls on a busy machine must not outlast it. runNow ends it below.
    for (const item of items) await delay.collect(T, 'big', item, { window: '1h' });
    await delay.collect(T, 'small', 's1', { window: '2h' });

    const listed = await delay.list(T);
    expect(listed.items.map((batch) => [batch.key, batch.size, batch.items])).toEqual([
      ['big', 25, items.slice(0, LISTED_BATCH_ITEMS)],
      ['small', 1, ['s1']],
    ]);
    expect((await delay.get(T, 'big'))?.items).toEqual(items);
    expect((await delay.get(T, 'big'))?.size).toBe(25);

    // Dead batches too: listDead shows the first ones and the size, and a redrive hands over every item.
    recorder.react(T, 'big', () => {
      throw new Error('refused');
    });
    expect(await delay.runNow(T, 'big')).toBe(true);
    await fixture.waitFor(async () => (await delay.countDead(T)) === 1, 'the big batch dies', 2_000);
    const [dead] = (await delay.listDead(T)).items;
    expect([dead.key, dead.size, dead.items]).toEqual(['big', 25, items.slice(0, LISTED_BATCH_ITEMS)]);
    recorder.react(T, 'big', () => undefined);
    expect(await delay.redrive(T, dead.id)).toBe(true);
    await fixture.waitFor(() => recorder.runsOf(T, 'big').length === 2, 'the redriven batch', 2_000);
    expect(recorder.batchesOf(T, 'big')).toEqual([items, items]);
  });

  it('emits collected for each item, and fired and completed for the batch, with its size', async () => {
    const { delay, recorder, events } = await fixture.boot();
    const statuses = [];
    // A window longer than the three calls take on a busy machine: the three items are one batch.
    for (const n of [1, 2, 3]) statuses.push(await delay.collect(T, 'ev', n, { window: 1_000 }));
    const collected = events.filter((event) => event.type === 'collected');
    expect(collected.map((event) => [event.topic, event.key, event.size, event.dueAt])).toEqual(statuses.map((status) => [T, 'ev', status.size, status.dueAt]));
    expect(collected.map((event) => event.size)).toEqual([1, 2, 3]);
    await fixture.waitFor(() => recorder.runs.length === 1, 'the batch', 1_400);
    await fixture.waitFor(() => events.some((event) => event.type === 'completed'), 'completed', 400);
    expect(events.filter((event) => event.type !== 'collected').map((event) => [event.type, event.key, event.attempt, event.size])).toEqual([
      ['fired', 'ev', 1, 3],
      ['completed', 'ev', 1, 3],
    ]);
  });
});
