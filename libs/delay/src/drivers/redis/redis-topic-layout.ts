import { TopicKeys, topicKeys } from './redis-keys';
import { shardOf } from './redis-shard-hash';

/**
 * How one topic's actions are spread for one shard count: the keys of each
 * shard, and which shard a key belongs to. Layouts with different counts
 * never share a key, which is what lets a topic change its count while
 * actions are pending (see RedisTopicLayouts).
 */
export class TopicLayout {
  readonly shards: readonly TopicKeys[];

  constructor(
    prefix: string,
    readonly topic: string,
    readonly count: number,
  ) {
    this.shards = Array.from({ length: count }, (_, shard) => topicKeys(prefix, topic, shard, count));
  }

  /** The keys of the shard that holds `key`. */
  keysFor(key: string): TopicKeys {
    return this.count === 1 ? this.shards[0] : this.shards[shardOf(key, this.count)];
  }

}
