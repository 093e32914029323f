import { DriverHealth, TopicHealth } from '../../interfaces/delay-health.interface';
import { TopicSummary } from '../../interfaces/topic-summary.interface';
import { RedisClient } from './redis-client';
import { RedisConnection } from './redis-connection';
import { TopicKeys, topicKeys, topicOfTag } from './redis-keys';
import { settleWithin } from '../../utils/settle-within';

/** What the health snapshot needs to know of a topic consumed in this process. */
export interface ConsumerState {
  readonly topic: string;
  /** Its consumers (one per shard) run, and their last claims reached Redis. */
  readonly alive: boolean;
}

/** How long health waits for Redis before calling it down. */
const DEFAULT_HEALTH_TIMEOUT_MS = 2_000;
/** Keys per SCAN step: large enough to cross a big keyspace in few round trips, small enough not to stall Redis. */
const SCAN_COUNT = 1_000;
/** The key suffixes that mean a topic (or one of its shards: the tag then ends in `#shard/count`) has something to show. */
const TOPIC_KEY = /^\{([^{}]+)\}:(env|dead-index|paused)$/;

/**
 * The operations of the Redis driver that act on a topic as a whole, for
 * every instance sharing the prefix: pause and resume (a `paused` key in
 * each shard that the claim script checks, and a wake on resume), run-now,
 * the topic listing (SCAN on every master) and the health snapshot.
 */
export class RedisTopicControl {
  constructor(
    private readonly connection: RedisConnection,
    private readonly prefix: string,
    /** Every shard of every layout of the topic that is known (one for a topic kept in one shard); `forWrite` before changing it. */
    private readonly shardsOf: (topic: string, forWrite: boolean) => Promise<readonly TopicKeys[]> = (topic) => Promise.resolve([topicKeys(prefix, topic)]),
  ) {}

  /** Pauses every shard; true if any shard was not paused before. */
  async pause(topic: string): Promise<boolean> {
    const shards = await this.shardsOf(topic, true);
    const replies = await Promise.all(shards.map((keys) => this.connection.write<number>('pause', [keys.paused], [])));
    return replies.includes(1);
  }

  async resume(topic: string): Promise<boolean> {
    const shards = await this.shardsOf(topic, true);
    const replies = await Promise.all(shards.map((keys) => this.connection.write<number>('resume', [keys.paused], [keys.wake])));
    return replies.includes(1);
  }

  async isPaused(topic: string): Promise<boolean> {
    const [first] = await this.shardsOf(topic, false);
    return (await this.connection.call('EXISTS', (client) => client.exists(first.paused))) === 1;
  }

  /** Makes a waiting action due now in the shard that holds it. */
  async runNow(keys: TopicKeys, key: string): Promise<boolean> {
    return (await this.connection.write<number>('runNow', [keys.due, keys.env, keys.ticks], [key, keys.wake])) === 1;
  }

  /** Every topic under the prefix with pending or dead actions, or paused, whichever instance made them, summed over its shards. */
  async topics(): Promise<TopicSummary[]> {
    const tags = await this.shardTags();
    const summaries = await Promise.all(
      [...tags].map(async ([topic, shards]): Promise<TopicSummary | undefined> => {
        const parts = await Promise.all([...shards].map((tag) => this.summary(keysOfTag(this.prefix, tag))));
        const [pending, running, dead] = [0, 1, 2].map((field) => parts.reduce((sum, part) => sum + Number(part[field]), 0));
        const paused = parts.some((part) => part[3]);
        if (pending === 0 && dead === 0 && !paused) return undefined;
        return { topic, waiting: Math.max(0, pending - running), running, dead, paused };
      }),
    );
    return summaries.filter((summary): summary is TopicSummary => summary !== undefined);
  }

  /**
   * Redis reachable (a PING within `timeoutMs`), its round trip, and per
   * topic consumed here whether its consumer is alive and how long its
   * earliest due action has waited unclaimed. Never rejects.
   */
  async health(consumers: Iterable<ConsumerState>, timeoutMs = DEFAULT_HEALTH_TIMEOUT_MS): Promise<DriverHealth> {
    const states = [...consumers];
    const started = performance.now();
    try {
      await this.connection.bounded('PING', settleWithin(this.connection.client.ping(), timeoutMs, noAnswer(timeoutMs)));
    } catch {
      return { up: false, roundTripMs: Math.round(performance.now() - started), topics: states.map((state) => ({ topic: state.topic, consuming: true, consumerAlive: false, lagMs: 0, paused: false })) };
    }
    const roundTripMs = Math.round((performance.now() - started) * 100) / 100;
    const topics = await Promise.all(
      states.map(async (state): Promise<TopicHealth> => {
        try {
          const shards = await settleWithin(this.shardsOf(state.topic, false), timeoutMs, noAnswer(timeoutMs));
          const parts = await settleWithin(Promise.all(shards.map((keys) => this.summary(keys))), timeoutMs, noAnswer(timeoutMs));
          // The topic waits as long as its most behind shard.
          const lagMs = Math.max(0, ...parts.map(([, , , , now, earliest]) => (earliest < 0 ? 0 : now - earliest)));
          return { topic: state.topic, consuming: true, consumerAlive: state.alive, lagMs, paused: parts.some((part) => part[3]) };
        } catch {
          return { topic: state.topic, consuming: true, consumerAlive: false, lagMs: 0, paused: false };
        }
      }),
    );
    return { up: true, roundTripMs, topics };
  }

  /** [pending, running, dead, paused, now, earliest due or -1] of one shard. */
  private async summary(keys: TopicKeys): Promise<[number, number, number, boolean, number, number]> {
    const reply = await this.connection.run<number[]>('topicSummary', [keys.env, keys.active, keys.deadIndex, keys.paused, keys.due, keys.ticks], []);
    return [Number(reply[0]), Number(reply[1]), Number(reply[2]), Number(reply[3]) === 1, Number(reply[4]), Number(reply[5])];
  }

  /** Topic → the hash tags of its shards found under the prefix, on every master of a Cluster. */
  private async shardTags(): Promise<Map<string, Set<string>>> {
    const client = this.connection.client;
    const nodes: RedisClient[] = client.isCluster ? (client as Extract<RedisClient, { nodes: unknown }>).nodes('master') : [client];
    const head = `${this.prefix}:`;
    const tags = new Map<string, Set<string>>();
    await Promise.all(
      nodes.map(async (node) => {
        let cursor = '0';
        do {
          const [next, keys] = await this.connection.call('SCAN', () => node.scan(cursor, 'MATCH', `${head}{*}:*`, 'COUNT', SCAN_COUNT));
          cursor = next;
          for (const key of keys) {
            const match = TOPIC_KEY.exec(key.slice(head.length));
            if (!match) continue;
            const topic = topicOfTag(match[1]);
            let shards = tags.get(topic);
            if (!shards) tags.set(topic, (shards = new Set()));
            shards.add(match[1]);
          }
        } while (cursor !== '0');
      }),
    );
    return tags;
  }
}

/** The keys of a shard from its hash tag as found by SCAN. */
function keysOfTag(prefix: string, tag: string): TopicKeys {
  const shard = /^(.*)#(\d+)\/(\d+)$/.exec(tag);
  return shard ? topicKeys(prefix, shard[1], Number(shard[2]), Number(shard[3])) : topicKeys(prefix, tag);
}

/** A Redis that stopped answering must not hang a health check. */
function noAnswer(ms: number): () => Error {
  return () => new Error(`no answer within ${ms} ms`);
}
