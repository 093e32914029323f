/**
 * The keys of one shard of a topic. They share one hash tag, so every script
 * touches a single Redis Cluster slot: `{topic}` for a topic kept in one
 * shard (the layout every topic had before shards existed), `{topic#3/8}`
 * for shard 3 of a topic spread over 8. A topic name cannot contain `#`
 * (see validateTopic), so a tag always reads back to its topic.
 */
export interface TopicKeys {
  /** ZSET of waiting actions, scored by due time. */
  readonly due: string;
  /** HASH key → envelope "token|attempt|dueAt|payload". */
  readonly env: string;
  /** ZSET of running actions, scored by lease expiry. */
  readonly active: string;
  /** The last arming token minted: tokens never repeat, even after Redis lost data (lua/include/token.lua). */
  readonly seq: string;
  /** HASH key → dead record. */
  readonly dead: string;
  /** ZSET of dead keys, scored by time of death (the listing order). */
  readonly deadIndex: string;
  /** Pub/sub channel told of a new earliest due time. */
  readonly wake: string;
  /** Prefix of a batch's items STRING: prefix + member. Same hash tag, same slot. */
  readonly itemsPrefix: string;
  /** Prefix of a claim's record (prefix + claim id): what it took, so a claim whose reply was lost can be asked again. */
  readonly claimPrefix: string;
  /** STRING whose existence pauses the topic on every instance (the claim script then starts nothing new). */
  readonly paused: string;
  /** HASH recurring series key → keys of its occurrences that may still be waiting or running (advance-series.lua); no field while none. */
  readonly series: string;
  /** ZSET of recurring ticks, scored by due time: a tick waits here, never in `due`, so a claim takes it without a handler slot. */
  readonly ticks: string;
  /** HASH recurring series key → its last run (lua/include/series-run.lua), written by the outcome scripts. */
  readonly runs: string;
  /** HASH recurring series key → until when a running instance declares it in code (declare.lua). */
  readonly declared: string;
  /** ZSET of recurring series keys, all scored 0, ranged by key for listings (list-series.lua). */
  readonly schedules: string;
}

export function topicKeys(prefix: string, topic: string, shard = 0, shards = 1): TopicKeys {
  const base = `${prefix}:{${shardTag(topic, shard, shards)}}`;
  return {
    due: `${base}:due`,
    env: `${base}:env`,
    active: `${base}:active`,
    seq: `${base}:seq`,
    dead: `${base}:dead`,
    deadIndex: `${base}:dead-index`,
    wake: `${base}:wake`,
    itemsPrefix: `${base}:items:`,
    claimPrefix: `${base}:claim:`,
    paused: `${base}:paused`,
    series: `${base}:series`,
    ticks: `${base}:ticks`,
    runs: `${base}:runs`,
    declared: `${base}:declared`,
    schedules: `${base}:schedules`,
  };
}

/** The hash tag of a shard, without the braces. */
export function shardTag(topic: string, shard: number, shards: number): string {
  return shards === 1 ? topic : `${topic}#${shard}/${shards}`;
}

/** The topic a hash tag belongs to. */
export function topicOfTag(tag: string): string {
  const mark = tag.indexOf('#');
  return mark < 0 ? tag : tag.slice(0, mark);
}

/**
 * The registry of a topic's shard counts in use (HASH count → when an
 * instance using it last said so). It shares the hash tag of the one-shard
 * layout, whose emptiness the registry script also reads.
 */
export function layoutRegistryKey(prefix: string, topic: string): string {
  return `${prefix}:{${topic}}:layouts`;
}
