import { DriverHealth, TopicHealth } from '../../interfaces/delay-health.interface';
import { TopicSummary } from '../../interfaces/topic-summary.interface';
import { RedisClient, RedisConnection } from './redis-connection';
import { TopicKeys, topicKeys } from './redis-keys';
import { settleWithin } from '../../utils/settle-within';

/** What the health snapshot needs to know of a topic consumed in this process. */
export interface ConsumerState {
  readonly topic: string;
  /** Its consumer runs, and its last claim reached Redis. */
  readonly alive: boolean;
}

/** How long health waits for Redis before calling it down. */
const DEFAULT_HEALTH_TIMEOUT_MS = 2_000;
/** Keys per SCAN step: large enough to cross a big keyspace in few round trips, small enough not to stall Redis. */
const SCAN_COUNT = 1_000;
/** The key suffixes that mean a topic has something to show. */
const TOPIC_KEY = /^\{([^{}]+)\}:(env|dead-index|paused)$/;

/**
 * The operations of the Redis driver that act on a topic as a whole, for
 * every instance sharing the prefix: pause and resume (a `paused` key the
 * claim script checks, and a wake on resume), run-now, the topic listing
 * (SCAN on every master) and the health snapshot.
 */
export class RedisTopicControl {
  constructor(
    private readonly connection: RedisConnection,
    private readonly prefix: string,
    private readonly keysOf: (topic: string) => TopicKeys = (topic) => topicKeys(prefix, topic),
  ) {}

  async pause(topic: string): Promise<boolean> {
    return (await this.connection.write<number>('pause', [this.keysOf(topic).paused], [])) === 1;
  }

  async resume(topic: string): Promise<boolean> {
    return (await this.connection.write<number>('resume', [this.keysOf(topic).paused], [this.keysOf(topic).wake])) === 1;
  }

  async isPaused(topic: string): Promise<boolean> {
    return (await this.connection.call('EXISTS', (client) => client.exists(this.keysOf(topic).paused))) === 1;
  }

  async runNow(topic: string, key: string): Promise<boolean> {
    const keys = this.keysOf(topic);
    return (await this.connection.write<number>('runNow', [keys.due, keys.env], [key, keys.wake])) === 1;
  }

  /** Every topic under the prefix with pending or dead actions, or paused, whichever instance made them. */
  async topics(): Promise<TopicSummary[]> {
    const names = await this.topicNames();
    const summaries = await Promise.all(
      [...names].map(async (topic): Promise<TopicSummary | undefined> => {
        const [pending, running, dead, paused] = await this.summary(topic);
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
          const [, , , paused, now, earliest] = await settleWithin(this.summary(state.topic), timeoutMs, noAnswer(timeoutMs));
          return { topic: state.topic, consuming: true, consumerAlive: state.alive, lagMs: earliest < 0 ? 0 : Math.max(0, now - earliest), paused };
        } catch {
          return { topic: state.topic, consuming: true, consumerAlive: false, lagMs: 0, paused: false };
        }
      }),
    );
    return { up: true, roundTripMs, topics };
  }

  /** [pending, running, dead, paused, now, earliest due or -1]. */
  private async summary(topic: string): Promise<[number, number, number, boolean, number, number]> {
    const keys = this.keysOf(topic);
    const reply = await this.connection.run<number[]>('topicSummary', [keys.env, keys.active, keys.deadIndex, this.keysOf(topic).paused, keys.due], []);
    return [Number(reply[0]), Number(reply[1]), Number(reply[2]), Number(reply[3]) === 1, Number(reply[4]), Number(reply[5])];
  }

  /** Topic names from the keys under the prefix, on every master of a Cluster. */
  private async topicNames(): Promise<Set<string>> {
    const client = this.connection.client;
    const nodes: RedisClient[] = client.isCluster ? (client as Extract<RedisClient, { nodes: unknown }>).nodes('master') : [client];
    const head = `${this.prefix}:`;
    const names = new Set<string>();
    await Promise.all(
      nodes.map(async (node) => {
        let cursor = '0';
        do {
          const [next, keys] = await this.connection.call('SCAN', () => node.scan(cursor, 'MATCH', `${head}{*}:*`, 'COUNT', SCAN_COUNT));
          cursor = next;
          for (const key of keys) {
            const match = TOPIC_KEY.exec(key.slice(head.length));
            if (match) names.add(match[1]);
          }
        } while (cursor !== '0');
      }),
    );
    return names;
  }
}

/** A Redis that stopped answering must not hang a health check. */
function noAnswer(ms: number): () => Error {
  return () => new Error(`no answer within ${ms} ms`);
}
