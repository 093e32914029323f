import { ConfigurableModuleBuilder } from '@nestjs/common';
import { DelayError } from './errors/delay.error';
import { InvalidDelayOptionsError } from './errors/invalid-delay-options.error';
import { DelayDriver } from './interfaces/delay-driver.interface';
import { BackoffOption, DelayHandlerOptions } from './interfaces/delay-handler-options.interface';
import { DelayDriverConfig, DelayModuleOptions, PostgresDriverConfig } from './interfaces/delay-module-options.interface';
import { DelayTransactionOptions } from './interfaces/delay-transaction.interface';
import { DelayClock } from './time/clock';
import { Duration, parseDuration } from './time/duration';
import { DEFAULT_HORIZON_MS } from './validation/due-time';
import { validateTopic } from './validation/action-input';
import { quoteInput } from './utils/quote-input';
import { POSTGRES_SCHEMA_PATTERN } from './drivers/postgres/postgres-migrations';

export const {
  ConfigurableModuleClass: ConfigurableDelayModule,
  MODULE_OPTIONS_TOKEN: DELAY_MODULE_OPTIONS,
} = new ConfigurableModuleBuilder<DelayModuleOptions>()
  .setClassMethodName('forRoot')
  // The method a `useClass` / `useExisting` provider implements: see DelayOptionsFactory.
  .setFactoryMethodName('createDelayOptions')
  .setExtras({ isGlobal: true }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
  .build();

export interface ResolvedBackoff {
  readonly type: 'fixed' | 'exponential';
  readonly delayMs: number;
  readonly maxDelayMs: number;
}

export interface ResolvedHandlerOptions {
  readonly attempts: number;
  readonly backoff: ResolvedBackoff;
  readonly concurrency: number;
  /** Undefined for no limit. */
  readonly timeoutMs: number | undefined;
  /** Each run in one transaction with its completion (DelayHandlerOptions.transactional). */
  readonly transactional: boolean;
}

export interface ResolvedDelayOptions {
  readonly driver: DelayDriverConfig;
  readonly clock: DelayClock | undefined;
  readonly defaults: ResolvedHandlerOptions;
  readonly maxPayloadBytes: number;
  readonly maxBatchItems: number;
  readonly maxBatchBytes: number;
  readonly maxPastMs: number;
  readonly shutdownTimeoutMs: number;
  readonly recurringOrphanGraceMs: number;
  readonly consume: boolean;
  readonly transactions: DelayTransactionOptions | undefined;
}

export const MAX_ATTEMPTS = 1000;
const BUILT_IN_DEFAULTS: ResolvedHandlerOptions = {
  attempts: 3,
  backoff: { type: 'exponential', delayMs: 1_000, maxDelayMs: 3_600_000 },
  concurrency: 10,
  // Long enough for any single domain action (a call or two to other
  // services), short enough that a hung one gives its slot back in minutes.
  timeoutMs: 300_000,
  transactional: false,
};

/** setTimeout's limit (about 24.8 days): a longer timer would fire at once. */
const MAX_TIMEOUT_MS = 2_147_483_647;

/**
 * The one place module options are checked and defaulted. Every problem is
 * collected, so a misconfigured app fails bootstrap once with the full list.
 */
export function resolveDelayOptions(options: DelayModuleOptions = {}): ResolvedDelayOptions {
  const problems: string[] = [];
  const driver = resolveDriver(options.driver, problems);
  if (options.clock !== undefined && !(options.clock instanceof DelayClock)) {
    problems.push('clock must extend DelayClock (for tests: new VirtualClock())');
  }
  const resolved: ResolvedDelayOptions = {
    driver,
    clock: options.clock,
    defaults: collectHandlerOptions(options.defaults ?? {}, BUILT_IN_DEFAULTS, 'defaults.', problems),
    maxPayloadBytes: positiveInteger(options.maxPayloadBytes, 65_536, 'maxPayloadBytes', problems),
    maxBatchItems: positiveInteger(options.maxBatchItems, 1_000, 'maxBatchItems', problems),
    maxBatchBytes: batchBytes(options, problems),
    maxPastMs: duration(options.maxPast, '1d', 'maxPast', problems),
    shutdownTimeoutMs: duration(options.shutdownTimeout, '10s', 'shutdownTimeout', problems),
    recurringOrphanGraceMs: duration(options.recurringOrphanGrace, '10m', 'recurringOrphanGrace', problems),
    consume: options.consume ?? true,
    transactions: checkTransactions(options.transactions, driver, problems),
  };
  if (resolved.recurringOrphanGraceMs > 0 && resolved.recurringOrphanGraceMs < 1_000) problems.push(`recurringOrphanGrace must be at least 1s, got ${quoteInput(options.recurringOrphanGrace)}`);
  if (typeof resolved.consume !== 'boolean') problems.push(`consume must be true or false, got ${quoteInput(options.consume)}`);
  if (problems.length > 0) throw new InvalidDelayOptionsError('DelayModule options', problems);
  return resolved;
}

/**
 * Checks the transaction options' shape. An ambient transaction with a
 * driver that cannot join one is refused here, at bootstrap: every write
 * made inside a transaction would otherwise be refused at run time.
 */
function checkTransactions(transactions: DelayTransactionOptions | undefined, driver: DelayDriverConfig, problems: string[]): DelayTransactionOptions | undefined {
  if (transactions === undefined) return undefined;
  if (typeof transactions !== 'object' || transactions === null) {
    problems.push('transactions must be an object: { adapters?, ambient? }');
    return undefined;
  }
  const { adapters, ambient, run } = transactions;
  if (run !== undefined) {
    if (typeof run !== 'function') problems.push('transactions.run must be a function: (work) => a transaction of your client running work(transaction)');
    else if (!canJoinTransactions(driver)) {
      const name = isDriverInstance(driver) ? driver.name : driver.type;
      problems.push(`transactions.run needs a driver that joins transactions (postgres); the "${name}" driver cannot`);
    }
  }
  if (adapters !== undefined) {
    if (!Array.isArray(adapters)) problems.push('transactions.adapters must be an array of DelayTransactionAdapter');
    else {
      adapters.forEach((adapter: unknown, n) => {
        const { name, matches, query, check } = (typeof adapter === 'object' && adapter !== null ? adapter : {}) as Record<string, unknown>;
        if (typeof name !== 'string' || typeof matches !== 'function' || typeof query !== 'function') {
          problems.push(`transactions.adapters[${n}] must have a name, matches(transaction) and query(transaction, sql, params)`);
        } else if (check !== undefined && typeof check !== 'function') {
          problems.push(`transactions.adapters[${n}].check must be a function when given`);
        }
      });
    }
  }
  if (ambient !== undefined) {
    if (typeof ambient !== 'function') problems.push('transactions.ambient must be a function returning the current transaction or undefined');
    else if (!canJoinTransactions(driver)) {
      const name = isDriverInstance(driver) ? driver.name : driver.type;
      problems.push(`transactions.ambient needs a driver that joins transactions (postgres); the "${name}" driver cannot`);
    }
  }
  return transactions;
}

function canJoinTransactions(driver: DelayDriverConfig): boolean {
  if (isDriverInstance(driver)) return driver.supportsTransactions === true;
  return driver.type === 'postgres';
}

/** Default cap on a batch's bytes: large enough for ordinary batches, small enough that one batch cannot fill a process or a Redis. */
export const DEFAULT_MAX_BATCH_BYTES = 4 * 1024 * 1024;

function batchBytes(options: DelayModuleOptions, problems: string[]): number {
  const payloadBytes = typeof options.maxPayloadBytes === 'number' && Number.isInteger(options.maxPayloadBytes) ? options.maxPayloadBytes : 65_536;
  const bytes = positiveInteger(options.maxBatchBytes, Math.max(DEFAULT_MAX_BATCH_BYTES, payloadBytes), 'maxBatchBytes', problems);
  if (options.maxBatchBytes !== undefined && bytes < payloadBytes) problems.push(`maxBatchBytes (${bytes}) must be at least maxPayloadBytes (${payloadBytes})`);
  return bytes;
}

/** Checks one handler's options over the module defaults; throws with every problem. */
export function resolveHandlerOptions(options: DelayHandlerOptions, defaults: ResolvedHandlerOptions, where: string): ResolvedHandlerOptions {
  const problems: string[] = [];
  const resolved = collectHandlerOptions(options, defaults, '', problems);
  if (problems.length > 0) throw new InvalidDelayOptionsError(where, problems);
  return resolved;
}

/** How long to wait before retry number `retry` (1 for the first retry). */
export function backoffDelay(backoff: ResolvedBackoff, retry: number): number {
  if (backoff.type === 'fixed') return backoff.delayMs;
  return Math.min(backoff.maxDelayMs, backoff.delayMs * 2 ** (retry - 1));
}

function collectHandlerOptions(options: DelayHandlerOptions, defaults: ResolvedHandlerOptions, prefix: string, problems: string[]): ResolvedHandlerOptions {
  const attempts = positiveInteger(options.attempts, defaults.attempts, `${prefix}attempts`, problems);
  if (attempts > MAX_ATTEMPTS) problems.push(`${prefix}attempts must be at most ${MAX_ATTEMPTS}, got ${attempts}`);
  return {
    attempts,
    backoff: options.backoff === undefined ? defaults.backoff : resolveBackoff(options.backoff, `${prefix}backoff`, problems),
    concurrency: positiveInteger(options.concurrency, defaults.concurrency, `${prefix}concurrency`, problems),
    timeoutMs: resolveTimeout(options.timeout, defaults.timeoutMs, `${prefix}timeout`, problems),
    transactional: resolveTransactional(options.transactional, defaults.transactional, `${prefix}transactional`, problems),
  };
}

function resolveTransactional(transactional: unknown, fallback: boolean, name: string, problems: string[]): boolean {
  if (transactional === undefined) return fallback;
  if (typeof transactional !== 'boolean') problems.push(`${name} must be true or false, got ${quoteInput(String(transactional))}`);
  return transactional === true;
}

function resolveTimeout(timeout: DelayHandlerOptions['timeout'], fallback: number | undefined, name: string, problems: string[]): number | undefined {
  if (timeout === undefined) return fallback;
  if (timeout === false) return undefined;
  const before = problems.length;
  const timeoutMs = duration(timeout, undefined, name, problems);
  if (problems.length > before) return fallback;
  if (timeoutMs < 1) problems.push(`${name} must be at least 1 ms (false for no timeout)`);
  if (timeoutMs > MAX_TIMEOUT_MS) problems.push(`${name} must be at most ${MAX_TIMEOUT_MS} ms (about 24 days); false for no timeout`);
  return timeoutMs;
}

function resolveBackoff(backoff: BackoffOption, name: string, problems: string[]): ResolvedBackoff {
  if (typeof backoff === 'number' || typeof backoff === 'string') {
    const delayMs = duration(backoff, 0, name, problems);
    if (delayMs > DEFAULT_HORIZON_MS) problems.push(`${name} must be at most 100 years`);
    return { type: 'fixed', delayMs, maxDelayMs: delayMs };
  }
  if (typeof backoff !== 'object' || backoff === null || (backoff.type !== 'fixed' && backoff.type !== 'exponential')) {
    problems.push(`${name} must be a duration or { type: 'fixed' | 'exponential', delay }`);
    return BUILT_IN_DEFAULTS.backoff;
  }
  const delayMs = duration(backoff.delay, undefined, `${name}.delay`, problems);
  if (delayMs > DEFAULT_HORIZON_MS) problems.push(`${name}.delay must be at most 100 years`);
  const maxDelayMs = backoff.type === 'exponential' && backoff.maxDelay !== undefined ? duration(backoff.maxDelay, undefined, `${name}.maxDelay`, problems) : backoff.type === 'fixed' ? delayMs : BUILT_IN_DEFAULTS.backoff.maxDelayMs;
  return { type: backoff.type, delayMs, maxDelayMs: Math.max(delayMs, maxDelayMs) };
}

function resolveDriver(driver: DelayDriverConfig | undefined, problems: string[]): DelayDriverConfig {
  if (driver === undefined) return { type: 'wheel' };
  if (isDriverInstance(driver)) return driver;
  if (typeof driver !== 'object' || driver === null || !('type' in driver)) {
    problems.push(`driver must be { type: 'wheel' }, { type: 'redis', ... }, { type: 'postgres', ... } or a DelayDriver instance`);
    return { type: 'wheel' };
  }
  if (driver.type === 'wheel') {
    if (driver.tickMs !== undefined && (!Number.isInteger(driver.tickMs) || driver.tickMs < 1 || driver.tickMs > 60_000)) {
      problems.push(`driver.tickMs must be a whole number of ms from 1 to 60000, got ${quoteInput(driver.tickMs)}`);
    }
    return driver;
  }
  if (driver.type === 'redis') {
    const sources = [driver.url, driver.options, driver.client].filter((source) => source !== undefined).length;
    if (sources > 1) problems.push('driver: give one of url, options or client, not several');
    if (driver.url !== undefined && (typeof driver.url !== 'string' || !/^rediss?:\/\//.test(driver.url))) {
      problems.push(`driver.url must start with redis:// or rediss://, got ${quoteInput(driver.url)}`);
    }
    if (driver.prefix !== undefined && (typeof driver.prefix !== 'string' || !/^[A-Za-z0-9._:-]{1,64}$/.test(driver.prefix))) {
      problems.push(`driver.prefix must be 1 to 64 of [A-Za-z0-9._:-], got ${quoteInput(driver.prefix)}`);
    }
    if (driver.lease !== undefined && duration(driver.lease, undefined, 'driver.lease', problems) < 1_000) {
      problems.push('driver.lease must be at least 1s');
    }
    if (driver.recurringLease !== undefined && duration(driver.recurringLease, undefined, 'driver.recurringLease', problems) < 1_000) {
      problems.push('driver.recurringLease must be at least 1s');
    }
    if (driver.claimBatch !== undefined && positiveInteger(driver.claimBatch, 1, 'driver.claimBatch', problems) > 1000) {
      problems.push('driver.claimBatch must be at most 1000');
    }
    if (driver.commandTimeout !== undefined && duration(driver.commandTimeout, undefined, 'driver.commandTimeout', problems) < 100) {
      problems.push('driver.commandTimeout must be at least 100ms');
    }
    if (driver.wakeCheck !== undefined && duration(driver.wakeCheck, undefined, 'driver.wakeCheck', problems) < 100) {
      problems.push('driver.wakeCheck must be at least 100ms');
    }
    if (driver.shards !== undefined) shardCount(driver.shards, 'driver.shards', problems);
    if (driver.topicShards !== undefined) {
      const perTopic: unknown = driver.topicShards;
      if (typeof perTopic !== 'object' || perTopic === null || Array.isArray(perTopic)) problems.push('driver.topicShards must be an object of topic → shard count');
      else {
        for (const [topic, count] of Object.entries(driver.topicShards)) {
          if (!isValidTopic(topic)) problems.push(`driver.topicShards: ${quoteInput(topic)} is not a valid topic name`);
          shardCount(count, `driver.topicShards[${quoteInput(topic)}]`, problems);
        }
      }
    }
    if (driver.waitForReplicas !== undefined) {
      const wait: unknown = driver.waitForReplicas;
      if (typeof wait !== 'object' || wait === null) problems.push('driver.waitForReplicas must be { replicas, timeout? }');
      else {
        if (driver.waitForReplicas.replicas === undefined) problems.push('driver.waitForReplicas.replicas is required');
        else positiveInteger(driver.waitForReplicas.replicas, 1, 'driver.waitForReplicas.replicas', problems);
        if (driver.waitForReplicas.timeout !== undefined && duration(driver.waitForReplicas.timeout, undefined, 'driver.waitForReplicas.timeout', problems) < 1) {
          problems.push('driver.waitForReplicas.timeout must be at least 1ms');
        }
      }
    }
    return driver;
  }
  if (driver.type === 'postgres') {
    checkPostgres(driver, problems);
    return driver;
  }
  problems.push(`driver.type must be 'wheel', 'redis' or 'postgres', got ${quoteInput((driver as { type: unknown }).type)}`);
  return { type: 'wheel' };
}

function checkPostgres(driver: PostgresDriverConfig, problems: string[]): void {
  const { connectionString, pool } = driver;
  if (connectionString !== undefined && pool !== undefined) problems.push('driver: give one of connectionString or pool, not both');
  if (connectionString === undefined && pool === undefined) problems.push("driver: the postgres driver needs connectionString (e.g. 'postgres://user@host:5432/db') or pool (your pg.Pool)");
  if (connectionString !== undefined && (typeof connectionString !== 'string' || !/^postgres(ql)?:\/\//.test(connectionString))) {
    problems.push('driver.connectionString must start with postgres:// or postgresql://');
  }
  if (pool !== undefined && (typeof pool !== 'object' || pool === null || typeof (pool as { connect?: unknown }).connect !== 'function')) {
    problems.push('driver.pool must be a pg.Pool (an object with connect())');
  }
  if (driver.schema !== undefined && (typeof driver.schema !== 'string' || !POSTGRES_SCHEMA_PATTERN.test(driver.schema))) {
    problems.push(`driver.schema must be 1 to 63 of [a-z0-9_], starting with a letter or _, got ${quoteInput(driver.schema)}`);
  }
  if (driver.migrate !== undefined && typeof driver.migrate !== 'boolean') problems.push(`driver.migrate must be true or false, got ${String(driver.migrate)}`);
  if (driver.lease !== undefined && duration(driver.lease, undefined, 'driver.lease', problems) < 1_000) problems.push('driver.lease must be at least 1s');
  if (driver.recurringLease !== undefined && duration(driver.recurringLease, undefined, 'driver.recurringLease', problems) < 1_000) {
    problems.push('driver.recurringLease must be at least 1s');
  }
  if (driver.claimBatch !== undefined && positiveInteger(driver.claimBatch, 1, 'driver.claimBatch', problems) > 1000) {
    problems.push('driver.claimBatch must be at most 1000');
  }
  if (driver.commandTimeout !== undefined && duration(driver.commandTimeout, undefined, 'driver.commandTimeout', problems) < 100) {
    problems.push('driver.commandTimeout must be at least 100ms');
  }
  if (driver.wakeCheck !== undefined && duration(driver.wakeCheck, undefined, 'driver.wakeCheck', problems) < 100) {
    problems.push('driver.wakeCheck must be at least 100ms');
  }
  if (driver.pooler !== undefined && driver.pooler !== 'session' && driver.pooler !== 'transaction') {
    problems.push(`driver.pooler must be 'session' or 'transaction', got ${quoteInput(driver.pooler)}`);
  }
  if (driver.vacuum !== undefined && typeof driver.vacuum !== 'boolean') problems.push(`driver.vacuum must be true or false, got ${quoteInput(driver.vacuum)}`);
}

export function isDriverInstance(driver: unknown): driver is DelayDriver {
  return typeof driver === 'object' && driver !== null && typeof (driver as DelayDriver).schedule === 'function' && typeof (driver as DelayDriver).start === 'function';
}

function isValidTopic(topic: string): boolean {
  try {
    validateTopic(topic);
    return true;
  } catch {
    return false;
  }
}

/** More shards than this spend a claim call per shard per wake check for no gain: a cluster has far fewer cores. */
export const MAX_SHARDS = 256;

function shardCount(value: unknown, name: string, problems: string[]): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_SHARDS) {
    problems.push(`${name} must be a whole number from 1 to ${MAX_SHARDS}, got ${quoteInput(value)}`);
  }
}

function positiveInteger(value: unknown, fallback: number, name: string, problems: string[]): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    problems.push(`${name} must be a whole number >= 1, got ${quoteInput(value)}`);
    return fallback;
  }
  return value;
}

function duration(value: Duration | undefined, fallback: Duration | undefined, name: string, problems: string[]): number {
  if (value === undefined && fallback === undefined) {
    problems.push(`${name} is required`);
    return 0;
  }
  try {
    return parseDuration(value ?? fallback);
  } catch (error) {
    problems.push(`${name}: ${error instanceof DelayError ? error.message : String(error)}`);
    return 0;
  }
}
