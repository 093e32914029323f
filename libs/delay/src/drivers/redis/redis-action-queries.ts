import { SeriesPageRequest, StoredAction, StoredDeadAction } from '../../interfaces/delay-driver.interface';
import { compareCodePoints } from '../../utils/code-point-order';
import { PageRequest } from '../../interfaces/pending-action.interface';
import { LISTED_BATCH_ITEMS } from '../../delay.constants';
import { RedisConnection } from './redis-connection';
import { parseDeadRecord, toStoredAction } from './redis-envelope';
import { TopicKeys } from './redis-keys';

type Reply = Array<string | number>;

/**
 * The read side of the Redis driver: one action, pages of pending and dead
 * actions, counts. A topic spread over shards is read shard by shard and
 * merged into the order a single shard gives: running actions first, then
 * by due time, then by key (keys compared byte by byte, as Redis does); dead
 * ones by time of death, then id. A page at offset N reads the first N +
 * limit of every shard, so deep pages cost more on a sharded topic.
 */
export class RedisActionQueries {
  constructor(private readonly connection: RedisConnection) {}

  async get(topic: string, keys: TopicKeys, key: string): Promise<StoredAction | null> {
    const reply = await this.connection.run<Reply | null>('get', [keys.env, keys.active, keys.paused], [key, keys.itemsPrefix]);
    return reply ? toStoredAction(topic, key, String(reply[0]), Number(reply[1]) === 1, String(reply[2]), Number(reply[3]) === 1) : null;
  }

  async list(topic: string, shards: readonly TopicKeys[], page: Required<PageRequest>): Promise<StoredAction[]> {
    return mergedPage(shards, page, compareListed, (keys, shardPage) => this.listShard(topic, keys, shardPage));
  }

  /**
   * The ticks after `page.after` by key, at most `page.limit`: each shard
   * reads its own page by key (list-series.lua) and the pages are merged in
   * code point order, which is the byte order Redis ranges keys by.
   */
  async listSeries(topic: string, shards: readonly TopicKeys[], page: SeriesPageRequest): Promise<StoredAction[]> {
    const pages = await Promise.all(
      shards.map(async (keys) => {
        const reply = await this.connection.write<Reply>('listSeries', [keys.env, keys.active, keys.ticks, keys.schedules, keys.paused], [page.after ?? '', page.limit]);
        const paused = Number(reply[0]) === 1;
        const actions: StoredAction[] = [];
        for (let n = 1; n < reply.length; n += 3) actions.push(toStoredAction(topic, String(reply[n]), String(reply[n + 1]), Number(reply[n + 2]) === 1, '', paused));
        return actions;
      }),
    );
    const merged = new Map<string, StoredAction>();
    for (const action of pages.flat().sort((a, b) => compareCodePoints(a.key, b.key))) if (!merged.has(action.key)) merged.set(action.key, action);
    return [...merged.values()].slice(0, page.limit);
  }

  async count(shards: readonly TopicKeys[]): Promise<number> {
    const counts = await Promise.all(shards.map((keys) => this.connection.call('HLEN', (client) => client.hlen(keys.env))));
    return counts.reduce((sum, count) => sum + count, 0);
  }

  async listDead(topic: string, shards: readonly TopicKeys[], page: Required<PageRequest>): Promise<StoredDeadAction[]> {
    return mergedPage(shards, page, compareDead, (keys, shardPage) => this.listDeadShard(topic, keys, shardPage));
  }

  async countDead(shards: readonly TopicKeys[]): Promise<number> {
    const counts = await Promise.all(shards.map((keys) => this.connection.call('ZCARD', (client) => client.zcard(keys.deadIndex))));
    return counts.reduce((sum, count) => sum + count, 0);
  }

  private async listShard(topic: string, keys: TopicKeys, page: Required<PageRequest>): Promise<StoredAction[]> {
    const reply = await this.connection.run<Reply>('list', [keys.due, keys.env, keys.active, keys.paused, keys.ticks], [page.offset, page.limit, keys.itemsPrefix, LISTED_BATCH_ITEMS]);
    // The first element says whether the topic is paused; then four per action.
    const paused = Number(reply[0]) === 1;
    const actions: StoredAction[] = [];
    for (let n = 1; n < reply.length; n += 4) {
      actions.push(toStoredAction(topic, String(reply[n]), String(reply[n + 1]), Number(reply[n + 2]) === 1, String(reply[n + 3]), paused));
    }
    return actions;
  }

  private async listDeadShard(topic: string, keys: TopicKeys, page: Required<PageRequest>): Promise<StoredDeadAction[]> {
    const members = await this.connection.call('ZRANGE', (client) => client.zrange(keys.deadIndex, page.offset, String(page.offset + page.limit - 1)));
    if (members.length === 0) return [];
    const records = await this.connection.call('HMGET', (client) => client.hmget(keys.dead, ...members));
    return members.flatMap((member, n) => {
      const record = records[n];
      return record === null ? [] : [parseDeadRecord(topic, member, record)];
    });
  }
}

/** One shard: its own page. Several: the first offset + limit of each, merged in `compare` order, then the page cut out. */
async function mergedPage<T>(
  shards: readonly TopicKeys[],
  page: Required<PageRequest>,
  compare: (a: T, b: T) => number,
  read: (keys: TopicKeys, page: Required<PageRequest>) => Promise<T[]>,
): Promise<T[]> {
  if (shards.length === 1) return read(shards[0], page);
  const head = { offset: 0, limit: page.offset + page.limit };
  const parts = await Promise.all(shards.map((keys) => read(keys, head)));
  return parts.flat().sort(compare).slice(page.offset, page.offset + page.limit);
}

function compareListed(a: StoredAction, b: StoredAction): number {
  if (a.state !== b.state) return a.state === 'running' ? -1 : 1;
  return a.dueAt - b.dueAt || compareCodePoints(a.key, b.key);
}

function compareDead(a: StoredDeadAction, b: StoredDeadAction): number {
  return a.diedAt - b.diedAt || compareCodePoints(a.id, b.id);
}
