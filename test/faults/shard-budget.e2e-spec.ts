import { RedisDriver } from '../../libs/delay/src/drivers/redis/redis.driver';
import { DelayConsumer, Delivery, DeliveryOutcome } from '../../libs/delay/src/interfaces/delay-driver.interface';
import { shardOf } from '../../libs/delay/src/drivers/redis/redis-shard-hash';
import { pollUntil, sleep } from '../conformance/support/driver-fixture';
import { proxiedRedis } from './support/proxied-redis';
import { driverScript } from './support/driver-scripts';

const TOPIC = 'budget.gated';
const SLOTS = 4;

/** A consumer whose handlers hold their slot until the test opens the gate; it records how many ran at once. */
class GatedConsumer implements DelayConsumer {
  readonly topics = new Map([[TOPIC, SLOTS]]);
  readonly started: Delivery[] = [];
  running = 0;
  mostAtOnce = 0;
  private gates: Array<() => void> = [];

  handle(delivery: Delivery): Promise<DeliveryOutcome> {
    this.started.push(delivery);
    this.running++;
    this.mostAtOnce = Math.max(this.mostAtOnce, this.running);
    return new Promise((resolve) =>
      this.gates.push(() => {
        this.running--;
        resolve({ kind: 'completed' });
      }),
    );
  }

  /** Every held handler finishes, in one turn of the event loop. */
  openAll(): void {
    const gates = this.gates;
    this.gates = [];
    for (const open of gates) open();
  }
}

function keysInShard(shard: number, count: number, prefix: string): string[] {
  const keys: string[] = [];
  for (let n = 0; keys.length < count; n++) if (shardOf(`${prefix}${n}`, 2) === shard) keys.push(`${prefix}${n}`);
  return keys;
}

/**
 * The handler slots a sharded topic shares (ClaimBudget) under faults: a
 * claim whose reply is lost and is asked again, and handlers that all
 * finish in the same turn of the event loop.
 */
describe('faults: handler slots of a topic spread over shards', () => {
  const drivers: RedisDriver[] = [];
  const rig = proxiedRedis('test', async () => {
    await Promise.all(drivers.splice(0).map((driver) => driver.close()));
  });
  jest.setTimeout(30_000);

  async function driver(url: string, prefix: string): Promise<RedisDriver> {
    const made = new RedisDriver({ type: 'redis', url, prefix, shards: 2, lease: '20s' });
    drivers.push(made);
    await made.connect();
    return made;
  }

  async function arm(producer: RedisDriver, keys: readonly string[]): Promise<void> {
    for (const key of keys) await producer.schedule({ topic: TOPIC, key, due: { delayMs: 0 }, payload: undefined, ifExists: 'replace', maxPastMs: 60_000 });
  }

  it('a lost claim reply handed back on retry never runs more handlers than the concurrency, now or later', async () => {
    const prefix = `budget-lost-${process.pid}`;
    const producer = await driver(rig.redis.url, prefix);
    const consumer = new GatedConsumer();
    // Shard 1 has work first; shard 0 gets work once shard 1's runs hold every slot.
    await arm(producer, keysInShard(1, 40, 'b'));
    const worker = await driver(rig.proxy.url, prefix);
    await worker.start(consumer);
    await pollUntil(() => consumer.running === SLOTS, 'shard 1 holds every slot', 10_000);

    // Shard 1's next claim (it takes every freed slot) runs in Redis but its reply is lost: it fails once the command timeout is up.
    const claims = driverScript('claim');
    // words: EVALSHA, sha, key count, the keys, then ARGV[1] (the limit).
    const lost = rig.proxy.dropReplies((words) => claims(words) && words.some((word) => word.includes(`{${TOPIC}#1/2}`)) && words[3 + Number(words[2])] === String(SLOTS), 1);
    consumer.openAll();
    await pollUntil(() => lost.length === 1, 'the claim reply is lost', 10_000);
    // Meanwhile shard 0 gets due work: its consumer finds no free slot and waits in line.
    await sleep(500);
    await arm(producer, keysInShard(0, 40, 'a'));
    // When shard 1's claim fails it gives its slots back, shard 0 takes them; shard 1 then asks for its lost claim again and gets all it took.
    await sleep(7_000);
    const afterFault = consumer.mostAtOnce;

    // Run everything else, a round at a time, and see how many run at once from now on.
    consumer.mostAtOnce = 0;
    for (let round = 0; round < 40 && consumer.started.length < 80; round++) {
      consumer.openAll();
      await sleep(150);
    }
    expect({ afterFault, later: consumer.mostAtOnce }).toEqual({ afterFault: SLOTS, later: SLOTS });
  });

  it('handlers that finish together do not hand every freed slot to the same shard while another waits', async () => {
    const prefix = `budget-fair-${process.pid}`;
    const producer = await driver(rig.redis.url, prefix);
    const consumer = new GatedConsumer();
    const busy = keysInShard(0, 40, 'a');
    const quiet = keysInShard(1, 8, 'b');
    await arm(producer, [...busy, ...quiet]);
    const worker = await driver(rig.redis.url, prefix);
    await worker.start(consumer);
    // Ten rounds: each time every running handler finishes at once.
    const rounds: number[][] = [];
    for (let round = 0; round < 10; round++) {
      await pollUntil(() => consumer.running === SLOTS, `round ${round} holds every slot`, 10_000);
      rounds.push(consumer.started.slice(-SLOTS).map((delivery) => shardOf(delivery.key, 2)));
      consumer.openAll();
    }
    // Both shards had work due from the start: the quiet one must get a slot long before the busy one is drained.
    const firstQuietRound = rounds.findIndex((shards) => shards.includes(1));
    const shown = rounds.map((shards) => shards.join('')).join(' ');
    expect({ quietWithin3Rounds: firstQuietRound >= 0 && firstQuietRound < 3, shown }).toEqual({ quietWithin3Rounds: true, shown });
  });
});

describe('faults: a pause across a change of shard count', () => {
  const drivers: RedisDriver[] = [];
  const rig = proxiedRedis('file', async () => {
    await Promise.all(drivers.splice(0).map((driver) => driver.close()));
  });
  jest.setTimeout(30_000);

  it('a topic paused under a count that is then forgotten stays paused under the next count', async () => {
    const prefix = `mig-pause-${process.pid}`;
    const topic = 'mig.pause';
    const settings = { type: 'redis' as const, url: rig.redis.url, prefix, wakeCheck: '100ms', commandTimeout: '1s' };
    // Paused while spread over 8 shards, with nothing pending; then every instance stops.
    const before = new RedisDriver({ ...settings, shards: 8 });
    await before.connect();
    expect(await before.pause(topic)).toBe(true);
    await before.close();
    // Redeployed with another count once the old one is stale (3 x wakeCheck + 2 x commandTimeout).
    await sleep(3_000);
    const after = new RedisDriver({ ...settings, shards: 1 });
    drivers.push(after);
    await after.connect();
    const paused = await after.isPaused(topic);
    const listed = (await after.topics()).find((summary) => summary.topic === topic)?.paused;
    expect({ paused, listed }).toEqual({ paused: true, listed: true });
  });
});
