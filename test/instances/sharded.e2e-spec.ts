// Several application instances, each its own Node process, on one topic
// spread over 8 shards: on one redis-server and on a Redis Cluster of 3
// masters (the shards' hash tags land on different masters). With no
// crash, each action must run exactly once, never before its due time, and
// the work must be shared between the instances. Then a topic's shard count
// is changed from 1 to 8 while 10,000 actions are pending and instances run.
import { TestRedisCluster } from '../support/redis-cluster';
import { Fleet, InstanceOptions, fleetSuite, report, sleep, summary } from './support/instances';
import type { ScheduleItem } from './support/protocol';

const TOPIC = 'order.unpaid';
const ACTIONS = 2_000;
const SPREAD_MS = 1_500;

const suite = fleetSuite();
let cluster: TestRedisCluster | undefined;

beforeAll(async () => {
  cluster = await TestRedisCluster.start({ replicasPerMaster: 0 });
}, 60_000);
afterAll(async () => {
  await cluster?.dispose();
});

/** Every start of the fleet checked against what was armed: lost, twice, unknown, early. */
function verdict(fleet: Fleet, dueOf: ReadonlyMap<string, number>): { twice: string[]; lost: string[]; unknown: string[]; early: string[] } {
  const runsByKey = new Map<string, number>();
  for (const start of fleet.starts) runsByKey.set(start.key, (runsByKey.get(start.key) ?? 0) + 1);
  return {
    twice: [...runsByKey].filter(([, runs]) => runs > 1).map(([key]) => key),
    lost: [...dueOf.keys()].filter((key) => !runsByKey.has(key)),
    unknown: [...runsByKey.keys()].filter((key) => !dueOf.has(key)),
    early: fleet.starts.filter((start) => start.dueAt !== dueOf.get(start.key) || start.firedAt < start.dueAt || start.at < start.dueAt).map((start) => start.key),
  };
}

describe.each(['one redis-server', 'a Redis Cluster of 3 masters'])('3 consumer instances on one topic over 8 shards, on %s', (where) => {
  it(`runs each of ${ACTIONS} actions exactly once, none before its due time, and spreads them across the instances`, async () => {
    const onCluster = where !== 'one redis-server';
    const connection: InstanceOptions = { consume: true, shards: 8, ...(onCluster && cluster ? { cluster: cluster.startupNodes } : {}) };
    const fleet = suite.fleet(`sharded-${onCluster ? 'cluster' : 'single'}`, TOPIC);
    const names = ['c1', 'c2', 'c3'];
    const [producer] = await Promise.all([fleet.spawn('producer', { ...connection, consume: false }), fleet.spawnAll(names, connection)]);

    const base = Date.now() + 1_000;
    const items: ScheduleItem[] = [];
    for (let n = 0; n < ACTIONS; n++) {
      const index = (n * 769) % ACTIONS;
      items.push({ key: `order-${index}`, at: base + Math.floor((index * SPREAD_MS) / ACTIONS), payload: { armId: `arm-${index}` } });
    }
    const dueOf = new Map(items.map((item) => [item.key, item.at as number]));
    await producer.call({ op: 'scheduleMany', items, parallel: 32 }, 30_000);

    await fleet.until(() => fleet.ends.length >= ACTIONS, 30_000, `${ACTIONS} completed runs`);
    await sleep(600);
    const pending = await producer.value({ op: 'count' });
    const split = fleet.split();
    const lateness = summary(fleet.starts.map((start) => start.at - start.dueAt));
    report(`8 shards on ${where}: runs ${fleet.starts.length}, split ${JSON.stringify(split)}, lateness ms p50 ${lateness.p50} p99 ${lateness.p99} max ${lateness.max}`);

    expect({ runs: fleet.starts.length, completed: fleet.ends.length, pending }).toEqual({ runs: ACTIONS, completed: ACTIONS, pending: 0 });
    expect(verdict(fleet, dueOf)).toEqual({ twice: [], lost: [], unknown: [], early: [] });
    expect(fleet.starts.every((start) => start.attempt === 1)).toBe(true);
    for (const name of names) expect(split[name]).toBeGreaterThanOrEqual(Math.floor(ACTIONS / names.length / 4));
    expect(split.producer).toBe(0);
  }, 90_000);
});

describe('changing a topic from 1 shard to 8 while 10,000 actions are pending and instances run', () => {
  it('runs every action exactly once, none early: old and new instances drain the old shard together, then the old ones stop', async () => {
    const fleet = suite.fleet('shard-migration', TOPIC);
    const [oldProducer, oldConsumers] = await Promise.all([fleet.spawn('old-producer', { consume: false }), fleet.spawnAll(['old1', 'old2'], { consume: true })]);

    // 10,000 on the one shard. The topic is paused meanwhile, so however slow this machine is, they are all
    // still pending when the count changes; they fall due from 1 s to 6 s from now.
    await oldProducer.call({ op: 'pause' });
    const base = Date.now() + 1_000;
    const dueOf = new Map<string, number>();
    const armed: ScheduleItem[] = [];
    for (let n = 0; n < 10_000; n++) {
      const at = base + ((n * 7_919) % 5_000);
      armed.push({ key: `old-${n}`, at, payload: { armId: `old-${n}` } });
      dueOf.set(`old-${n}`, at);
    }
    await oldProducer.call({ op: 'scheduleMany', items: armed, parallel: 64 }, 60_000);

    // The rollout: instances with 8 shards start while the old ones run; they arm new work in the 8 shards.
    const [newProducer] = await Promise.all([fleet.spawn('new-producer', { consume: false, shards: 8 }), fleet.spawnAll(['new1', 'new2'], { consume: true, shards: 8 })]);
    const fresh: ScheduleItem[] = [];
    for (let n = 0; n < 2_000; n++) {
      const at = Date.now() + 500 + ((n * 613) % 3_000);
      fresh.push({ key: `new-${n}`, at, payload: { armId: `new-${n}` } });
      dueOf.set(`new-${n}`, at);
    }
    await newProducer.call({ op: 'scheduleMany', items: fresh, parallel: 32 }, 30_000);
    const pendingAtSwitch = Number(await newProducer.value({ op: 'count' }));

    // Resumed from a new instance (it resumes every shard of both counts): old and new consumers drain the one shard together...
    await newProducer.call({ op: 'resume' });
    await fleet.until(() => fleet.starts.filter((start) => start.key.startsWith('old-')).length >= 1_000, 30_000, 'the old arming to start running');
    // ...until the old instances stop, mid-drain.
    await Promise.all([...oldConsumers, oldProducer].map((instance) => instance.call({ op: 'close' })));

    await fleet.until(() => fleet.ends.length >= dueOf.size, 60_000, `${dueOf.size} completed runs`);
    await sleep(800);
    const pending = await newProducer.value({ op: 'count' });
    const split = fleet.split();
    report(`migration 1 -> 8 shards: ${pendingAtSwitch} pending at the switch, runs ${fleet.starts.length}, split ${JSON.stringify(split)}`);

    expect(pendingAtSwitch).toBeGreaterThanOrEqual(10_000);
    expect({ runs: fleet.starts.length, pending }).toEqual({ runs: dueOf.size, pending: 0 });
    expect(verdict(fleet, dueOf)).toEqual({ twice: [], lost: [], unknown: [], early: [] });
    // Both generations ran part of the old arming: the new instances drained what the old ones left.
    const oldRuns = (name: string): number => fleet.starts.filter((start) => start.instance === name && start.key.startsWith('old-')).length;
    expect(oldRuns('old1') + oldRuns('old2')).toBeGreaterThan(0);
    expect(oldRuns('new1') + oldRuns('new2')).toBeGreaterThan(0);
  }, 150_000);
});
