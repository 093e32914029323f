import { DelayEvent } from 'nestjs-delay';
import { BATCH_TOPIC, RETRY_ATTEMPTS, RETRY_BACKOFF_MS } from './support/batch-recorder';
import { batchDrivers } from './support/batch-fixture';

const T = BATCH_TOPIC.plain;
const R = BATCH_TOPIC.retry;
const S = BATCH_TOPIC.serial;

/** type, attempt and size of the events of one key, in order. */
function trail(events: DelayEvent[], key: string): Array<[string, number | undefined, number | undefined]> {
  return events.filter((event) => event.key === key).map((event) => [event.type, event.attempt, event.size]);
}

/** The entries that pass `test`, then the others, each in their order. */
function partition<T>(entries: T[], test: (entry: T) => boolean): [T[], T[]] {
  return [entries.filter(test), entries.filter((entry) => !test(entry))];
}

describe.each(batchDrivers())('collect: handling, retries and dead batches ($name)', (fixture) => {
  beforeAll(() => fixture.setup(), 60_000);
  afterAll(() => fixture.teardown());
  afterEach(() => fixture.shutdown());

  it('retries a failed batch whole, with the same items, while new items open the next batch', async () => {
    const { delay, recorder, events } = await fixture.boot();
    recorder.react(R, 'flaky', (run) => {
      if (run.attempt === 1 && run.items[0] === 'a') throw new Error('receiver down');
    });
    // A window far longer than the case, ended by runNow: a busy machine must not close the batch between the items.
    for (const item of ['a', 'b', 'c']) await delay.collect(R, 'flaky', item, { window: '1h' });
    expect(await delay.runNow(R, 'flaky')).toBe(true);
    await fixture.waitFor(() => events.some((event) => event.type === 'retrying'), 'the first attempt fails', 400);
    expect(recorder.runs).toHaveLength(1);

    // The failed batch stays closed: a new item does not join the retry.
    const late = await delay.collect(R, 'flaky', 'd', { window: '1h' });
    expect([late.size, late.flushed]).toEqual([1, false]);
    expect((await delay.get(R, 'flaky'))?.items).toEqual(['d']);
    expect(await delay.count(R)).toBe(2);

    await fixture.waitFor(() => recorder.runs.length === 2, 'the retry', RETRY_BACKOFF_MS + 400);
    const [first, second] = recorder.runs;
    expect(first).toMatchObject({ key: 'flaky', items: ['a', 'b', 'c'], attempt: 1 });
    expect(second).toMatchObject({ key: 'flaky', items: ['a', 'b', 'c'], attempt: 2 });
    expect(second.firedAt - first.firedAt).toBeGreaterThanOrEqual(RETRY_BACKOFF_MS);

    // The batch opened during the retry, ended now.
    expect(await delay.runNow(R, 'flaky')).toBe(true);
    await fixture.waitFor(() => recorder.runs.length === 3, 'the batch opened during the retry', 600);
    expect(recorder.runs[2]).toMatchObject({ key: 'flaky', items: ['d'], attempt: 1 });
    await fixture.waitFor(async () => (await delay.count(R)) === 0, 'nothing left pending', 400);
    expect(await delay.countDead(R)).toBe(0);
    // runNow's 'rescheduled' is published once the call returns; the consumer may have fired the batch by then.
    const [moved, rest] = partition(trail(events, 'flaky'), ([type]) => type === 'rescheduled');
    expect(moved).toHaveLength(2);
    expect(rest).toEqual([
      ['collected', undefined, 1],
      ['collected', undefined, 2],
      ['collected', undefined, 3],
      ['fired', 1, 3],
      ['failed', 1, 3],
      ['retrying', 1, 3],
      ['collected', undefined, 1],
      ['fired', 2, 3],
      ['completed', 2, 3],
      ['fired', 1, 1],
      ['completed', 1, 1],
    ]);
  });

  it('refuses to redrive a dead single action onto a key whose batch is open, and changes nothing', async () => {
    const { delay, recorder } = await fixture.boot();
    recorder.react(R, 'shared', () => {
      throw new Error('rejected');
    });
    await delay.schedule(R, 'shared', { delay: 10, payload: { single: true } });
    await fixture.waitFor(async () => (await delay.countDead(R)) === 1, 'the single action dies', RETRY_BACKOFF_MS + 600);
    await delay.collect(R, 'shared', 'kept', { window: '1h' });

    await expect(delay.redrive(R, 'shared')).rejects.toMatchObject({ code: 'ERR_DELAY_KIND_CONFLICT', key: 'shared' });
    expect((await delay.get(R, 'shared'))?.items).toEqual(['kept']);
    expect((await delay.listDead(R)).items.map((record) => [record.id, record.payload])).toEqual([['shared', { single: true }]]);
    // redriveAll skips it (it stays dead) instead of failing or looping on it.
    await expect(delay.redriveAll(R)).resolves.toBe(0);
    expect(await delay.countDead(R)).toBe(1);
  });

  it('dead-letters a batch as one unit, keeps two dead batches of a key apart, and redrives one by its id', async () => {
    const { delay, recorder, events } = await fixture.boot();
    let healthy = false;
    recorder.react(R, 'doomed', () => {
      if (!healthy) throw new Error('rejected');
    });
    for (const item of ['x', 'y', 'z']) await delay.collect(R, 'doomed', item, { window: '1h' });
    expect(await delay.runNow(R, 'doomed')).toBe(true);
    await fixture.waitFor(async () => (await delay.countDead(R)) === 1, 'the batch dies', RETRY_BACKOFF_MS + 600);
    expect(recorder.batchesOf(R, 'doomed')).toEqual([
      ['x', 'y', 'z'],
      ['x', 'y', 'z'],
    ]);
    expect(recorder.runs.map((run) => run.attempt)).toEqual([1, 2]);
    expect(await delay.count(R)).toBe(0);
    expect(await delay.get(R, 'doomed')).toBeNull();
    expect(trail(events, 'doomed').filter(([type]) => type === 'dead')).toEqual([['dead', RETRY_ATTEMPTS, 3]]);

    // A second batch of the same key dies as a unit of its own.
    await delay.collect(R, 'doomed', 'w', { window: 100 });
    await fixture.waitFor(async () => (await delay.countDead(R)) === 2, 'the second batch dies', 100 + RETRY_BACKOFF_MS + 600);
    const dead = await delay.listDead(R);
    expect(dead.total).toBe(2);
    expect(dead.items.map((record) => [record.key, record.items, record.attempts, record.error])).toEqual([
      ['doomed', ['x', 'y', 'z'], RETRY_ATTEMPTS, 'rejected'],
      ['doomed', ['w'], RETRY_ATTEMPTS, 'rejected'],
    ]);
    const [xyz, w] = dead.items;
    expect(xyz.id).not.toBe(w.id);
    expect(xyz.id).not.toBe('doomed');
    expect(xyz.payload).toBeUndefined();

    // The bare key names no dead batch; the id does, once.
    healthy = true;
    expect(await delay.redrive(R, 'doomed')).toBe(false);
    const before = recorder.runs.length;
    expect(await delay.redrive(R, xyz.id)).toBe(true);
    expect(await delay.redrive(R, xyz.id)).toBe(false);
    // The re-driven batch comes back closed: a new item opens a batch of its own.
    const fresh = await delay.collect(R, 'doomed', 'v', { window: 100 });
    expect(fresh.size).toBe(1);
    expect((await delay.listDead(R)).items.map((record) => record.items)).toEqual([['w']]);

    await fixture.waitFor(() => recorder.runs.length === before + 2, 'the re-driven batch and the new one', 600);
    const after = recorder.runs.slice(before);
    expect(after.map((run) => [run.items, run.attempt]).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))).toEqual([
      [['v'], 1],
      [['x', 'y', 'z'], 1],
    ]);
    expect(await delay.countDead(R)).toBe(1);

    expect(await delay.redriveAll(R)).toBe(1);
    await fixture.waitFor(() => recorder.runs.length === before + 3, 'the last dead batch re-driven', 600);
    expect(recorder.runs[before + 2]).toMatchObject({ items: ['w'], attempt: 1 });
    await fixture.waitFor(async () => (await delay.count(R)) === 0, 'nothing left pending', 400);
    expect(await delay.countDead(R)).toBe(0);
  });

  it('opens the next batch while one is being handled: none lost, none twice', async () => {
    const { delay, recorder } = await fixture.boot();
    const latch = recorder.latch();
    recorder.react(T, 'slow', async (run) => {
      if (run.items[0] === 1) await latch.released;
    });
    // Windows far longer than the case, ended by runNow: a busy machine must not close a batch between its items.
    await delay.collect(T, 'slow', 1, { window: '1h' });
    await delay.collect(T, 'slow', 2, { window: '1h' });
    expect(await delay.runNow(T, 'slow')).toBe(true);
    await fixture.waitFor(() => recorder.runs.length === 1, 'the first batch starts', 400);
    expect(recorder.active).toBe(1);

    const statuses = [];
    for (const n of [3, 4, 5]) statuses.push(await delay.collect(T, 'slow', n, { window: '1h' }));
    expect(statuses.map((status) => [status.size, status.flushed])).toEqual([
      [1, false],
      [2, false],
      [3, false],
    ]);
    const open = await delay.get(T, 'slow');
    expect(open).toMatchObject({ key: 'slow', items: [3, 4, 5], state: 'waiting', attempt: 1 });
    expect(await delay.count(T)).toBe(2);
    const listed = await delay.list(T);
    expect(listed.total).toBe(2);
    expect(listed.items.map((batch) => [batch.state, batch.items])).toEqual([
      ['running', [1, 2]],
      ['waiting', [3, 4, 5]],
    ]);

    latch.release();
    expect(await delay.runNow(T, 'slow')).toBe(true);
    await fixture.waitFor(() => recorder.runs.length === 2, 'the second batch', 600);
    await fixture.waitFor(async () => (await delay.count(T)) === 0, 'both batches done', 400);
    await fixture.elapse(200);
    expect(recorder.batchesOf(T, 'slow')).toEqual([
      [1, 2],
      [3, 4, 5],
    ]);
  });

  it('keeps a due batch open until its handler actually starts', async () => {
    const { delay, recorder } = await fixture.boot();
    // One handler at a time, and both batches fall due together: whichever starts first is held,
    // and the other is due but cannot start.
    const latch = recorder.latch();
    for (const key of ['p', 'q']) recorder.react(S, key, (run) => (run.items.length === 1 ? latch.released : undefined));
    await delay.collect(S, 'p', 'p1', { window: 50 });
    await delay.collect(S, 'q', 'q1', { window: 50 });
    await fixture.waitFor(() => recorder.runs.length === 1, 'one batch starts', 400);
    const held = recorder.runs[0].key;
    const other = held === 'p' ? 'q' : 'p';
    // In real time the two were collected a few ms apart: let the other's due time pass too.
    await fixture.waitFor(async () => ((await delay.get(S, other))?.dueAt.getTime() ?? Infinity) <= fixture.now(), 'the other batch to fall due', 200);
    const waiting = await delay.get(S, other);
    expect(waiting?.state).toBe('waiting');
    expect(waiting?.dueAt.getTime()).toBeLessThanOrEqual(fixture.now());
    // Due, not started: still open, so items keep joining it.
    const joined = await delay.collect(S, other, `${other}2`, { window: 50 });
    expect([joined.size, joined.flushed]).toEqual([2, false]);
    expect(recorder.runs).toHaveLength(1);
    latch.release();
    await fixture.waitFor(() => recorder.runs.length === 2, 'the other batch', 600);
    expect(recorder.batchesOf(S, other)).toEqual([[`${other}1`, `${other}2`]]);
  });
});
