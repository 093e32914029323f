// What the PostgreSQL bench's main process and its worker processes share.
// The payload, the keys and the IPC messages are the Redis bench's.
export { actionKey, makePayload, PAYLOAD_BYTES } from '../redis/protocol';
export type { BenchPayload, ParentMessage, WorkerMessage, WorkerReport } from '../redis/protocol';

/** The nestjs-delay topic, the pg-boss queue and the graphile-worker task: one short name for all. */
export const NAME = 'bench';

/** The schemas of each system, on the bench's one database. */
export const SCHEMAS = { delay: 'nestjs_delay', pgboss: 'pgboss', graphile: 'graphile_worker', bare: 'bare' } as const;

/** Phase 11: the table the handlers that write insert their one row into (through `context.transaction`, or the worker's pool). */
export const SINK_TABLE = 'public.bench_sink';

/**
 * nestjs-delay's handler in a worker (phase 11 runs each): a no-op; an INSERT of one row into SINK_TABLE through a
 * `pg` pool of the worker's (autocommit, as concurrency connections); `transactional: true` with no statement of its
 * own (the run's transaction holds the arming's lock and the completion only); `transactional: true` with the same
 * INSERT through `context.transaction`.
 */
export type DelayHandlerKind = 'noop' | 'insert' | 'transactional' | 'transactional-insert';

export function handlerLabel(handler: DelayHandlerKind): string {
  return { noop: 'no-op', insert: '1 INSERT through a pool (autocommit)', transactional: 'transactional, no-op', 'transactional-insert': 'transactional + 1 INSERT' }[handler];
}

export type PgContender = 'delay' | 'pgboss' | 'graphile';

export const CONTENDERS: readonly PgContender[] = ['pgboss', 'graphile', 'delay'];

export function contenderLabel(kind: PgContender | 'bare'): string {
  return { delay: 'nestjs-delay', pgboss: 'pg-boss', graphile: 'graphile-worker', bare: 'bare SQL (floor)' }[kind];
}

/** Passed to a worker process as its one argument (JSON). */
export interface PgWorkerConfig {
  readonly kind: PgContender;
  readonly url: string;
  /** Handlers in flight per process (nestjs-delay concurrency, graphile-worker concurrency, pg-boss batchSize). */
  readonly concurrency: number;
  /** Rows taken per claim (nestjs-delay claimBatch, pg-boss batchSize, graphile-worker localQueue.size). */
  readonly claimBatch: number;
  /**
   * nestjs-delay only: hold the driver's estimate of the database clock's offset at 0 (bench and
   * server share one machine and one clock) instead of the best recent sample it measures from each
   * statement's send (a what-if: what a perfect estimate would give).
   */
  readonly zeroOffset?: boolean;
  /** nestjs-delay only: what its handler does (a no-op if not given). */
  readonly handler?: DelayHandlerKind;
}
