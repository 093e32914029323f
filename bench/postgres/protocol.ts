// What the PostgreSQL bench's main process and its worker processes share.
// The payload, the keys and the IPC messages are the Redis bench's.
export { actionKey, makePayload, PAYLOAD_BYTES } from '../redis/protocol';
export type { BenchPayload, ParentMessage, WorkerMessage, WorkerReport } from '../redis/protocol';

/** The nestjs-delay topic, the pg-boss queue and the graphile-worker task: one short name for all. */
export const NAME = 'bench';

/** The schemas of each system, on the bench's one database. */
export const SCHEMAS = { delay: 'nestjs_delay', pgboss: 'pgboss', graphile: 'graphile_worker', bare: 'bare' } as const;

/** Phase 11: the table each transactional handler inserts its one row into, through `context.transaction`. */
export const SINK_TABLE = 'public.bench_sink';

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
  /**
   * nestjs-delay only: the handler is `transactional: true` (each run one transaction of the driver's own
   * connection with the action's completion) and inserts one row into SINK_TABLE through `context.transaction`.
   */
  readonly transactional?: boolean;
}
