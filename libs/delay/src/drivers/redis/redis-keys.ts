/**
 * The keys of one topic. They share the hash tag `{prefix:topic}`, so every
 * script touches a single Redis Cluster slot.
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
}

export function topicKeys(prefix: string, topic: string): TopicKeys {
  const base = `${prefix}:{${topic}}`;
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
  };
}
