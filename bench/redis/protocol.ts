// What the Redis benchmark's main process and its worker processes share:
// names, the payload, and the messages they exchange over the IPC channel.

/** The nestjs-delay topic and the BullMQ queue name: the same short name for both. */
export const TOPIC = 'bench';
export const QUEUE = 'bench';
export const JOB_NAME = 'action';
/** JSON bytes of every payload, as DESIGN.md's memory figure asks. */
export const PAYLOAD_BYTES = 108;

export type ContenderKind = 'delay' | 'bullmq';

export interface BenchPayload {
  readonly key: string;
  /** When the action is due, epoch ms on this machine's clock. */
  readonly dueAt: number;
  readonly pad: string;
}

/** Keys of one width, so every payload has exactly PAYLOAD_BYTES of JSON. */
export function actionKey(prefix: string, n: number): string {
  return `${prefix}-${String(n).padStart(7, '0')}`;
}

export function makePayload(key: string, dueAt: number): BenchPayload {
  const bare = JSON.stringify({ key, dueAt, pad: '' }).length;
  if (bare > PAYLOAD_BYTES) throw new Error(`key "${key}" too long for a ${PAYLOAD_BYTES}-byte payload`);
  return { key, dueAt, pad: 'x'.repeat(PAYLOAD_BYTES - bare) };
}

/** Passed to a worker process as its one argument (JSON). */
export interface WorkerConfig {
  readonly kind: ContenderKind;
  readonly url: string;
  readonly concurrency: number;
  readonly claimBatch: number;
}

/** What one worker saw: per run, the key, its due time, handler start and end (epoch ms). */
export interface WorkerReport {
  readonly keys: string[];
  readonly dueAt: number[];
  readonly start: number[];
  readonly end: number[];
  /** process.cpuUsage() since the worker was ready, µs. */
  readonly cpuMicros: number;
  /** Event-loop lag since ready (perf_hooks, beyond its 10 ms timer), ms: how late any timer of this process fired. */
  readonly loopDelay: { readonly p50: number; readonly p99: number; readonly max: number };
}

export type ParentMessage = { readonly type: 'report' } | { readonly type: 'stop' };

export type WorkerMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'progress'; readonly done: number }
  | { readonly type: 'report'; readonly report: WorkerReport }
  | { readonly type: 'failed'; readonly error: string };
