// One instance of the transactional-handler fault storm
// (test/postgres/transactional-storm.e2e-spec.ts), in its own process: a Nest
// application with the postgres driver whose handler is not idempotent. Each
// run inserts one ledger row (key, attempt, pid, run) into a table with no
// unique key, schedules a follow-up action through DelayService (passing no
// transaction: in a transactional run it joins the run's), and then sleeps
// 0-200 ms (seeded), so that kills land mid-handler and between the last
// write and the commit. An action whose payload asks to hold (holdMs) waits
// instead until its run is given up (its timeout, or the process is killed):
// that run wrote and never completes, whatever the timing.
// With ledger.transactional the writes go through context.transaction (the
// driver's pg client); without, through a pool of the worker's own, each
// committed at once. Started by Fleet (test/instances/support/instances.ts)
// with this file as its entry; speaks protocol.ts: 'start' is reported once
// the run's writes are made (not when it is entered), 'end' as the handler
// returns (before the commit).
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DelayContext, DelayModule, DelayService, OnDelayExpired } from 'nestjs-delay';
import { Pool, PoolClient } from 'pg';
import type { ActionPayload, LedgerConfig, ReplyValue, ScheduleItem, WorkerCommand, WorkerConfig, WorkerMessage, WorkerRequest } from '../../instances/support/protocol';
import { seededRandom } from '../../support/seeded-random';

const config = JSON.parse(process.env.NESTJS_DELAY_WORKER ?? 'null') as WorkerConfig | null;
if (!config?.ledger || !process.send) {
  console.error('ledger worker: start me from the test harness (NESTJS_DELAY_WORKER with a ledger, and an IPC channel)');
  process.exit(2);
}
const settings: WorkerConfig = config;
const ledger: LedgerConfig = config.ledger;

/** Resolves once the message is handed to the IPC channel. */
function send(message: WorkerMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.connected || !process.send) resolve();
    else process.send(message, undefined, {}, () => resolve());
  });
}

// Never outlive the test.
process.on('disconnect', () => process.exit(0));
setTimeout(() => process.exit(3), settings.maxLifetimeMs ?? 120_000).unref();

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const random = seededRandom(ledger.seed);

/** The plain handler's writes: a pool of the worker's own, each statement committed by itself. */
const plainPool = ledger.transactional ? undefined : new Pool({ connectionString: settings.url, max: 5, application_name: 'nestjs-delay ledger' });
// A connection cut by the storm while idle: the next query opens another.
plainPool?.on('error', () => undefined);

let runs = 0;

@Injectable()
class LedgerHandler {
  constructor(private readonly delay: DelayService) {}

  @OnDelayExpired(settings.topic, { transactional: ledger.transactional, concurrency: settings.concurrency ?? 20, attempts: 100, backoff: 100, timeout: ledger.timeout })
  async run(context: DelayContext<ActionPayload>): Promise<void> {
    const { key, attempt, signal } = context;
    const run = `${settings.name}#${++runs}`;
    const db: Pool | PoolClient | undefined = ledger.transactional ? (context.transaction as PoolClient) : plainPool;
    if (!db) throw new Error('no database to write the ledger row to');
    await db.query(`INSERT INTO ${ledger.table} (key, attempt, pid, run) VALUES ($1, $2, $3, $4)`, [key, attempt, process.pid, run]);
    // No transaction passed: in a transactional run it joins the run's.
    await this.delay.schedule(ledger.followUpTopic, key, { delay: 3_600_000, payload: { run, attempt }, ifExists: 'replace' });
    const common = { instance: settings.name, key, armId: run, attempt };
    void send({ type: 'start', ...common, dueAt: context.dueAt.getTime(), firedAt: context.firedAt.getTime(), at: Date.now() });
    const payload = context.payload ?? {};
    if (payload.holdMs !== undefined && attempt <= (payload.holdAttempts ?? Infinity)) {
      // Until the run is given up (its timeout): it wrote, and never completes.
      await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
    } else {
      await sleep(Math.floor(random() * 201));
    }
    void send({ type: 'end', ...common, at: Date.now() });
  }
}

@Module({
  imports: [
    DelayModule.forRoot({
      driver: {
        type: 'postgres',
        connectionString: settings.url,
        schema: settings.prefix,
        ...(settings.lease ? { lease: settings.lease } : {}),
        ...(settings.wakeCheck ? { wakeCheck: settings.wakeCheck } : {}),
      },
      consume: settings.consume,
      ...(settings.shutdownTimeout ? { shutdownTimeout: settings.shutdownTimeout } : {}),
    }),
  ],
  providers: [LedgerHandler],
})
class LedgerWorkerModule {}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(LedgerWorkerModule, { logger: ['error'] });
  const delay = app.get(DelayService);
  const topic = settings.topic;
  const schedule = async (item: ScheduleItem): Promise<void> => {
    await delay.schedule<ActionPayload>(topic, item.key, { ...(item.at !== undefined ? { at: item.at } : { delay: item.delay ?? 0 }), payload: item.payload });
  };

  const perform = async (request: WorkerRequest): Promise<ReplyValue> => {
    switch (request.op) {
      case 'schedule':
        await schedule(request);
        return true;
      case 'scheduleMany': {
        let next = 0;
        const lane = async (): Promise<void> => {
          while (next < request.items.length) await schedule(request.items[next++]);
        };
        await Promise.all(Array.from({ length: Math.max(1, request.parallel) }, lane));
        return request.items.length;
      }
      case 'count':
        return delay.count(topic);
      case 'close':
        await app.close();
        await plainPool?.end();
        return true;
      default:
        throw new Error(`the ledger worker does not do ${request.op}`);
    }
  };

  process.on('message', (message: unknown) => {
    const command = message as WorkerCommand;
    const issuedAt = Date.now();
    void perform(command).then(
      async (value) => {
        await send({ type: 'reply', id: command.id, ok: true, value, issuedAt, returnedAt: Date.now() });
        if (command.op === 'close') process.exit(0);
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
  console.error('ledger worker failed to start:', error);
  process.exit(1);
});
