import { TopicKeys, topicKeys } from './redis-keys';
import { shardOf } from './redis-shard-hash';
import { SERIES_SEPARATOR } from '../../recurring/occurrence-key';

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

  /**
   * The keys of the shard that holds `key`. An occurrence of a recurring
   * series (series key, U+001E, identity) lives in its series' shard, so the
   * step that advances the series touches one slot.
   */
  keysFor(key: string): TopicKeys {
    if (this.count === 1) return this.shards[0];
    const separator = key.indexOf(SERIES_SEPARATOR);
    return this.shards[shardOf(separator < 0 ? key : key.slice(0, separator), this.count)];
  }

}
