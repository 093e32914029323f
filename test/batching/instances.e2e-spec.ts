import { BATCH_TOPIC, BatchRun } from './support/batch-recorder';
import { BatchApp, PostgresBatchFixture, pollFor, RedisBatchFixture, realSleep } from './support/batch-fixture';

const T = BATCH_TOPIC.fanIn;
const PRODUCERS = 20;
const ITEMS_PER_PRODUCER = 100;
const KEYS = 10;
const WINDOW_MS = 50;
const MAX_ITEMS = 25;

interface FanInItem {
  readonly id: string;
  readonly key: string;
  readonly producer: number;
  readonly seq: number;
}

/** Appends one producer's items one after another, over every key, through one app. */
async function produce(app: BatchApp, producer: number): Promise<number[]> {
  const sizes: number[] = [];
  for (let seq = 0; seq < ITEMS_PER_PRODUCER; seq++) {
    const key = `merchant-${(producer * 3 + seq) % KEYS}`;
    const item: FanInItem = { id: `${producer}/${seq}`, key, producer, seq };
    sizes.push((await app.delay.collect(T, key, item, { window: WINDOW_MS, maxItems: MAX_ITEMS })).size);
  }
  return sizes;
}

function delivered(apps: BatchApp[]): BatchRun[] {
  return apps.flatMap((app) => app.recorder.runsOf(T));
}

function itemCount(runs: BatchRun[]): number {
  return runs.reduce((total, run) => total + run.items.length, 0);
}

describe.each([new RedisBatchFixture(), new PostgresBatchFixture()])('collect on $name: concurrent producers on two instances', (fixture) => {

  beforeAll(() => fixture.setup());
  afterAll(() => fixture.teardown());
  afterEach(() => fixture.shutdown());
  // Two apps boot in this test: on a busy machine that alone can take seconds.
  jest.setTimeout(30_000);

  it('delivers every item exactly once, in batches of at most maxItems, each in its producers\' order', async () => {
    const apps = [await fixture.boot(), await fixture.bootPeer()];
    const total = PRODUCERS * ITEMS_PER_PRODUCER;

    const sizes = (await Promise.all(Array.from({ length: PRODUCERS }, (_, producer) => produce(apps[producer % apps.length], producer)))).flat();
    expect(sizes).toHaveLength(total);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(MAX_ITEMS);

    await pollFor(() => itemCount(delivered(apps)) >= total, `all ${total} items delivered`, 10_000);
    // Longer than a window more, so a duplicate delivery would have time to show.
    await realSleep(4 * WINDOW_MS);
    const runs = delivered(apps);
    const ids = runs.flatMap((run) => (run.items as FanInItem[]).map((item) => item.id));
    const sent = Array.from({ length: PRODUCERS }, (_, producer) => Array.from({ length: ITEMS_PER_PRODUCER }, (__, seq) => `${producer}/${seq}`)).flat();
    // None lost, none twice.
    expect(ids).toHaveLength(total);
    expect([...ids].sort()).toEqual(sent.sort());

    for (const run of runs) {
      const items = run.items as FanInItem[];
      expect(run.attempt).toBe(1);
      expect(items.length).toBeGreaterThanOrEqual(1);
      expect(items.length).toBeLessThanOrEqual(MAX_ITEMS);
      expect(items.every((item) => item.key === run.key)).toBe(true);
      // A producer awaits each append: its items in any one batch are in the order it sent them.
      for (let producer = 0; producer < PRODUCERS; producer++) {
        const seqs = items.filter((item) => item.producer === producer).map((item) => item.seq);
        expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      }
    }
    // Both instances took part in the handling.
    for (const app of apps) expect(app.recorder.runsOf(T).length).toBeGreaterThan(0);
    expect(await apps[0].delay.count(T)).toBe(0);
    expect(await apps[1].delay.countDead(T)).toBe(0);
  });

  it('an instance closing mid-stream starts nothing after close, and the other instance takes the rest', async () => {
    const leaving = await fixture.boot();
    const staying = await fixture.bootPeer();
    // The leaving instance's handlers take a moment, so its acks can meet its shutdown.
    for (let key = 0; key < 6; key++) leaving.recorder.react(T, `shop-${key}`, () => realSleep(3));
    const producers = 6;
    const perProducer = 100;
    const total = producers * perProducer;
    let appended = 0;
    let closing: Promise<number> | undefined;
    const produceThroughStaying = async (producer: number): Promise<void> => {
      for (let seq = 0; seq < perProducer; seq++) {
        const key = `shop-${(producer + seq) % 6}`;
        const item: FanInItem = { id: `${producer}/${seq}`, key, producer, seq };
        await staying.delay.collect(T, key, item, { window: 20, maxItems: 3 });
        // Halfway through, the other instance shuts down while batches keep falling due.
        if (++appended === total / 2) closing = fixture.close(leaving).then(() => leaving.recorder.runs.length);
      }
    };
    await Promise.all(Array.from({ length: producers }, (_, producer) => produceThroughStaying(producer)));
    const runsAtClose = await closing;
    expect(runsAtClose).toBeDefined();

    const apps = [leaving, staying];
    await pollFor(() => itemCount(delivered(apps)) >= total, `all ${total} items delivered`, 5_000);
    await realSleep(100);
    expect(leaving.recorder.runs).toHaveLength(runsAtClose ?? -1);
    const ids = delivered(apps).flatMap((run) => (run.items as FanInItem[]).map((item) => item.id));
    expect(ids).toHaveLength(total);
    expect(new Set(ids).size).toBe(total);
    expect(await staying.delay.count(T)).toBe(0);
  });
});
