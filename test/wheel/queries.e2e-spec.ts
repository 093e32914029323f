import { DelayModule, DelayService, VirtualClock } from 'nestjs-delay';
import { useApps } from './support/apps';

const TOPIC = 'order.auto-rate';

describe('get / list / count (wheel driver)', () => {
  const apps = useApps();
  let clock: VirtualClock;
  let delay: DelayService;
  let start: number;

  beforeEach(async () => {
    clock = new VirtualClock();
    start = clock.now();
    const app = await apps.boot({ imports: [DelayModule.forRoot({ clock })] });
    delay = app.get(DelayService);
  });

  it('get returns what is pending: payload, due time, attempt and state', async () => {
    const returned = await delay.schedule(TOPIC, 'o-1', { delay: '48h', payload: { stars: 5, note: 'auto' } });
    const expected = { topic: TOPIC, key: 'o-1', payload: { stars: 5, note: 'auto' }, dueAt: new Date(start + 48 * 3_600_000), attempt: 1, state: 'waiting', paused: false };
    expect(returned).toEqual(expected);
    expect(await delay.get(TOPIC, 'o-1')).toEqual(expected);
    expect(await delay.get(TOPIC, 'o-2')).toBeNull();
    expect(await delay.get('other.topic', 'o-1')).toBeNull();
  });

  it('schedules at an absolute time given as a Date or as epoch ms', async () => {
    const at = new Date(start + 90_000);
    expect((await delay.schedule(TOPIC, 'by-date', { at })).dueAt).toEqual(at);
    expect((await delay.schedule(TOPIC, 'by-ms', { at: start + 120_000 })).dueAt).toEqual(new Date(start + 120_000));
    // A little in the past (within maxPast) is allowed: it is due at once.
    expect((await delay.schedule(TOPIC, 'just-missed', { at: start - 60_000 })).dueAt).toEqual(new Date(start - 60_000));
    expect(await delay.count(TOPIC)).toBe(3);
  });

  it('list pages through a topic ordered by due time (then key), with the total', async () => {
    const delays: Array<[string, string]> = [
      ['e', '5h'],
      ['b', '2h'],
      ['d', '4h'],
      ['a', '1h'],
      ['c2', '3h'],
      ['c1', '3h'],
    ];
    for (const [key, after] of delays) await delay.schedule(TOPIC, key, { delay: after, payload: key });
    await delay.schedule('other.topic', 'x', { delay: '1m' });

    const first = await delay.list(TOPIC, { limit: 4 });
    expect(first).toMatchObject({ total: 6, offset: 0, limit: 4 });
    expect(first.items.map((item) => item.key)).toEqual(['a', 'b', 'c1', 'c2']);
    expect(first.items[0]).toEqual({ topic: TOPIC, key: 'a', payload: 'a', dueAt: new Date(start + 3_600_000), attempt: 1, state: 'waiting', paused: false });

    const second = await delay.list(TOPIC, { offset: 4, limit: 4 });
    expect(second).toMatchObject({ total: 6, offset: 4, limit: 4 });
    expect(second.items.map((item) => item.key)).toEqual(['d', 'e']);

    const defaults = await delay.list(TOPIC);
    expect(defaults).toMatchObject({ total: 6, offset: 0, limit: 100 });
    expect(defaults.items).toHaveLength(6);
    expect(await delay.list('empty.topic')).toEqual({ items: [], total: 0, offset: 0, limit: 100 });
  });

  it('count follows schedule, replace and cancel', async () => {
    expect(await delay.count(TOPIC)).toBe(0);
    await delay.schedule(TOPIC, 'a', { delay: '1m' });
    await delay.schedule(TOPIC, 'b', { delay: '2m' });
    await delay.schedule(TOPIC, 'a', { delay: '3m' });
    expect(await delay.count(TOPIC)).toBe(2);
    await delay.cancel(TOPIC, 'b');
    expect(await delay.count(TOPIC)).toBe(1);
    expect(await delay.count('other.topic')).toBe(0);
  });

  it('keeps an action of a topic no handler here consumes pending past its due time', async () => {
    await delay.schedule(TOPIC, 'a', { delay: '1m' });
    await clock.advance('1h');
    expect(await delay.get(TOPIC, 'a')).toMatchObject({ state: 'waiting', attempt: 1, dueAt: new Date(start + 60_000) });
    expect(await delay.count(TOPIC)).toBe(1);
  });

  it('reschedule moves an action and keeps its payload', async () => {
    await delay.schedule(TOPIC, 'a', { delay: '1h', payload: { stars: 4 } });
    const moved = await delay.reschedule(TOPIC, 'a', { at: new Date(start + 7_200_000) });
    expect(moved).toMatchObject({ key: 'a', payload: { stars: 4 }, dueAt: new Date(start + 7_200_000) });
    expect(await delay.get(TOPIC, 'a')).toEqual(moved);
    expect(await delay.reschedule(TOPIC, 'missing', { delay: '1h' })).toBeNull();
    expect(await delay.count(TOPIC)).toBe(1);
  });
});
