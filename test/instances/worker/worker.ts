// One application instance of the multi-instance tests: a real Nest
// application context with the Redis driver (or, with driver 'postgres', the
// PostgreSQL one) and an @OnDelayExpired handler
// (and, with batchTopic set, a second one for collect's batches), in its
// own process. It reports every handler run to the parent over IPC and runs
// the DelayService calls the parent sends it (so producers are separate
// processes too). Config: the JSON in NESTJS_DELAY_WORKER.
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cluster } from 'ioredis';
import type { RedisOptions } from 'ioredis';
import { DelayContext, DelayDriverConfig, DelayModule, DelayService, DueTime, OnDelayExpired, OnRecurring, PendingAction, Recurring } from 'nestjs-delay';
import type { ActionPayload, ActionSnapshot, BatchItem, DueArg, ReplyValue, ScheduleItem, WorkerCommand, WorkerConfig, WorkerMessage, WorkerRequest } from '../support/protocol';

const config = JSON.parse(process.env.NESTJS_DELAY_WORKER ?? 'null') as WorkerConfig | null;
if (!config || !process.send) {
  console.error('worker: start me from the test harness (NESTJS_DELAY_WORKER and an IPC channel are required)');
  process.exit(2);
}
const settings: WorkerConfig = config;

/** Resolves once the message is handed to the IPC channel (so an exit right after loses nothing). */
function send(message: WorkerMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.connected || !process.send) resolve();
    else process.send(message, undefined, {}, () => resolve());
  });
}

// Never outlive the test: exit when the parent goes away, and after a while in any case.
process.on('disconnect', () => process.exit(0));
setTimeout(() => process.exit(3), settings.maxLifetimeMs ?? 120_000).unref();

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

@Injectable()
class Handlers {
  @OnDelayExpired(settings.topic, { concurrency: settings.concurrency ?? 10, attempts: 10, backoff: 200 })
  async run(context: DelayContext<ActionPayload>): Promise<void> {
    const payload = context.payload ?? {};
    const common = { instance: settings.name, key: context.key, armId: payload.armId, attempt: context.attempt };
    void send({ type: 'start', ...common, dueAt: context.dueAt.getTime(), firedAt: context.firedAt.getTime(), at: Date.now() });
    const holds = !settings.ignoreHolds && payload.holdMs !== undefined && context.attempt <= (payload.holdAttempts ?? Infinity);
    if (holds) await sleep(payload.holdMs ?? 0);
    void send({ type: 'end', ...common, at: Date.now() });
  }
}

/** Handles batchTopic (only registered when it is set): reports the batch's items, holds while an item asks to. */
@Injectable()
class BatchHandlers {
  @OnDelayExpired(settings.batchTopic ?? 'unused.batch', { concurrency: settings.concurrency ?? 10, attempts: 10, backoff: 200 })
  async run(context: DelayContext<unknown, BatchItem>): Promise<void> {
    const items = context.items ?? [];
    const common = { instance: settings.name, key: context.key, armId: undefined, attempt: context.attempt, items };
    void send({ type: 'start', ...common, dueAt: context.dueAt.getTime(), firedAt: context.firedAt.getTime(), at: Date.now() });
    const holdMs = Math.max(0, ...items.filter((item) => item.holdMs !== undefined && context.attempt <= (item.holdAttempts ?? Infinity)).map((item) => item.holdMs ?? 0));
    if (!settings.ignoreHolds && holdMs > 0) await sleep(holdMs);
    void send({ type: 'end', ...common, at: Date.now() });
  }
}

/** Reports an occurrence of a recurring schedule: key is the schedule's, armId the scheduled instant (and 'now' for a run-now). */
function reportOccurrence(context: DelayContext, holdMs = 0): Promise<void> | void {
  const occurrence = context.occurrence;
  const armId = occurrence ? `${occurrence.scheduledAt.toISOString()}${occurrence.runNow ? ' now' : ''}` : undefined;
  const common = { instance: settings.name, key: `${context.topic}/${context.key}`, armId, attempt: context.attempt };
  void send({ type: 'start', ...common, dueAt: context.dueAt.getTime(), firedAt: context.firedAt.getTime(), at: Date.now() });
  if (holdMs <= 0) {
    void send({ type: 'end', ...common, at: Date.now() });
    return;
  }
  // The schedule's payload asked the run to take this long (a process killed meanwhile never reports its end).
  return sleep(holdMs).then(() => void send({ type: 'end', ...common, at: Date.now() }));
}

@Injectable()
class RecurringHandlers {
  @OnRecurring(settings.recurringTopic ?? 'unused.recurring', { concurrency: settings.concurrency ?? 10, attempts: 10, backoff: 200 })
  run(context: DelayContext<ActionPayload>): Promise<void> | void {
    return reportOccurrence(context, context.payload?.holdMs);
  }
}

/** One provider per declared schedule, its method decorated as a class written by hand would be. */
function declaredProviders(): Array<new () => object> {
  return (settings.declared ?? []).map(({ topic, every }) => {
    @Injectable()
    class Declared {
      run(context: DelayContext): void {
        reportOccurrence(context);
      }
    }
    const descriptor = Object.getOwnPropertyDescriptor(Declared.prototype, 'run') as PropertyDescriptor;
    Recurring(topic, { every, missed: 'all', overlap: 'allow', attempts: 10, backoff: 200 })(Declared.prototype, 'run', descriptor);
    return Declared;
  });
}

/** A Cluster client is the worker's own (the driver leaves a client it was given open): closed after the app. */
const clusterClient = settings.cluster ? new Cluster(settings.cluster.map((node) => ({ ...node }))) : undefined;
clusterClient?.on('error', () => undefined);

function connection(): { url: string } | { options: RedisOptions } | { client: Cluster } {
  if (clusterClient) return { client: clusterClient };
  const delayMs = settings.reconnectDelayMs;
  if (delayMs === undefined) return { url: settings.url };
  const url = new URL(settings.url);
  return { options: { host: url.hostname, port: Number(url.port), retryStrategy: () => delayMs } };
}

function driver(): DelayDriverConfig {
  const lease = settings.lease ? { lease: settings.lease } : {};
  if (settings.driver === 'postgres') {
    return { type: 'postgres', connectionString: settings.url, schema: settings.prefix, ...lease, ...(settings.wakeCheck ? { wakeCheck: settings.wakeCheck } : {}) };
  }
  return { type: 'redis', ...connection(), prefix: settings.prefix, shards: settings.shards ?? 1, ...lease };
}

@Module({
  imports: [
    DelayModule.forRoot({
      driver: driver(),
      consume: settings.consume,
      ...(settings.shutdownTimeout ? { shutdownTimeout: settings.shutdownTimeout } : {}),
    }),
  ],
  providers: [
    Handlers,
    ...(settings.batchTopic === undefined ? [] : [BatchHandlers]),
    ...(settings.recurringTopic === undefined ? [] : [RecurringHandlers]),
    ...declaredProviders(),
  ],
})
class WorkerModule {}

function due(arg: DueArg): DueTime {
  return arg.at !== undefined ? { at: arg.at } : { delay: arg.delay ?? 0 };
}

function snapshot(action: PendingAction<ActionPayload> | null): ActionSnapshot | null {
  if (!action) return null;
  return { key: action.key, dueAt: action.dueAt.getTime(), attempt: action.attempt, state: action.state, armId: action.payload?.armId };
}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(WorkerModule, { logger: ['error', 'warn'] });
  const delay = app.get(DelayService);
  const topic = settings.topic;

  const schedule = async (item: ScheduleItem): Promise<ActionSnapshot | null> =>
    snapshot(await delay.schedule<ActionPayload>(topic, item.key, { ...due(item), payload: item.payload, ifExists: item.ifExists ?? 'replace' }));

  const perform = async (request: WorkerRequest): Promise<ReplyValue> => {
    switch (request.op) {
      case 'schedule':
        return schedule(request);
      case 'scheduleMany': {
        let next = 0;
        const lane = async (): Promise<void> => {
          while (next < request.items.length) await schedule(request.items[next++]);
        };
        await Promise.all(Array.from({ length: Math.max(1, request.parallel) }, lane));
        return request.items.length;
      }
      case 'cancel':
        return delay.cancel(topic, request.key);
      case 'reschedule':
        return snapshot(await delay.reschedule<ActionPayload>(topic, request.key, due(request)));
      case 'collect': {
        if (settings.batchTopic === undefined) throw new Error('collect needs batchTopic in the worker config');
        const options = { window: request.windowMs, ...(request.maxItems === undefined ? {} : { maxItems: request.maxItems }) };
        return (await delay.collect<BatchItem>(settings.batchTopic, request.key, request.item, options)).size;
      }
      case 'count':
        return delay.count(request.batch ? (settings.batchTopic ?? topic) : topic);
      case 'pause':
        await delay.pause(topic);
        return true;
      case 'resume':
        await delay.resume(topic);
        return true;
      case 'upsertRecurring':
        await delay.upsertRecurring(settings.recurringTopic ?? topic, request.key, {
          every: request.every,
          missed: 'all',
          overlap: request.overlap ?? 'allow',
          ...(request.holdMs === undefined ? {} : { payload: { holdMs: request.holdMs } }),
        });
        return true;
      case 'removeRecurring':
        return delay.removeRecurring(settings.recurringTopic ?? topic, request.key);
      case 'close':
        await app.close();
        clusterClient?.disconnect();
        return true;
    }
  };

  process.on('message', (message: unknown) => {
    const command = message as WorkerCommand;
    const issuedAt = Date.now();
    void perform(command).then(
      async (value) => {
        await send({ type: 'reply', id: command.id, ok: true, value, issuedAt, returnedAt: Date.now() });
        if (command.op !== 'close') return;
        if (settings.exitAfterClose === false) process.channel?.unref();
        else process.exit(0);
      },
      (error: unknown) => {
        const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        void send({ type: 'reply', id: command.id, ok: false, error: text, issuedAt, returnedAt: Date.now() });
      },
    );
  });
  void send({ type: 'ready', instance: settings.name, pid: process.pid });
}

main().catch((error: unknown) => {
  console.error('worker failed to start:', error);
  process.exit(1);
});
