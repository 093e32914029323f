// Several application instances, each its own Node process, consume one
// topic of the Redis driver. With no crash, each action must run exactly
// once (none lost, none twice), never before its due time, and the work
// must be shared between the instances.
import { fleetSuite, report, sleep, summary } from './support/instances';
import type { ScheduleItem } from './support/protocol';

const TOPIC = 'order.unpaid';
const ACTIONS = 2_000;
/** Due times are spread evenly over this window, which opens a little after scheduling starts. */
const SPREAD_MS = 1_500;

const suite = fleetSuite();

describe.each([2, 3])('%i consumer instances (separate processes) on one topic', (consumers) => {
  it(`runs each of ${ACTIONS} actions exactly once, none before its due time, and spreads them across the instances`, async () => {
    const current = suite.fleet(`once-${consumers}`, TOPIC);
    const names = Array.from({ length: consumers }, (_, n) => `c${n + 1}`);
    const [producer] = await Promise.all([current.spawn('producer', { consume: false }), current.spawnAll(names, { consume: true })]);

    // Scheduled in an order unrelated to the due order (a stride through the keys).
    const base = Date.now() + 800;
    const items: ScheduleItem[] = [];
    for (let n = 0; n < ACTIONS; n++) {
      const index = (n * 769) % ACTIONS;
      items.push({ key: `order-${index}`, at: base + Math.floor((index * SPREAD_MS) / ACTIONS), payload: { armId: `arm-${index}` } });
    }
    const dueOf = new Map(items.map((item) => [item.key, item.at as number]));
    await producer.call({ op: 'scheduleMany', items, parallel: 32 }, 30_000);
    const scheduledIn = Date.now() - (base - 800);

    await current.until(() => current.ends.length >= ACTIONS, 20_000, `${ACTIONS} completed runs`);
    // Room for a duplicate or a late run to show up.
    await sleep(600);
    const pending = await producer.count();

    const runsByKey = new Map<string, number>();
    for (const start of current.starts) runsByKey.set(start.key, (runsByKey.get(start.key) ?? 0) + 1);
    const twice = [...runsByKey].filter(([, runs]) => runs > 1).map(([key]) => key);
    const lost = [...dueOf.keys()].filter((key) => !runsByKey.has(key));
    const unknown = [...runsByKey.keys()].filter((key) => !dueOf.has(key));
    const early = current.starts.filter((start) => start.dueAt !== dueOf.get(start.key) || start.firedAt < start.dueAt || start.at < start.dueAt);
    const split = current.split();
    const lateness = summary(current.starts.map((start) => start.at - start.dueAt));
    report(
      `${consumers} instances, ${ACTIONS} actions (scheduled in ${scheduledIn} ms, due over ${SPREAD_MS} ms): ` +
        `runs ${current.starts.length}, split ${JSON.stringify(split)}, lateness ms p50 ${lateness.p50} p99 ${lateness.p99} max ${lateness.max}`,
    );

    expect({ runs: current.starts.length, completed: current.ends.length, pending }).toEqual({ runs: ACTIONS, completed: ACTIONS, pending: 0 });
    expect({ twice, lost, unknown, early }).toEqual({ twice: [], lost: [], unknown: [], early: [] });
    expect(current.starts.every((start) => start.attempt === 1)).toBe(true);
    // Every instance took a real share of the work (an even share would be 1/consumers).
    for (const name of names) expect(split[name]).toBeGreaterThanOrEqual(Math.floor(ACTIONS / consumers / 4));
    expect(split.producer).toBe(0);
  }, 60_000);
});
