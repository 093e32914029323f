// The rig of the postgres tests in which a claim's reply is lost, held or its
// hand-back fails (lost-reply-on-reset, lost-hand-back, stalled-claim-at-shutdown):
// one server, a fault proxy in front of it, instances booted on either, and
// handlers that record every run of a topic whose actions have one attempt.
import { INestApplication, Injectable } from '@nestjs/common';
import { DelayContext, DelayService, OnDelayExpired } from 'nestjs-delay';
import { bootDelayApp, pollUntil, sleep } from '../../conformance/support/driver-fixture';
import { TestPostgresServer } from '../../support/postgres-server';
import { TcpFaultProxy } from './tcp-fault-proxy';

/** One attempt: an action that comes back as attempt 2 goes to the dead set without running. */
export const LOST_TOPIC = 'pglost.once';
export const COMMAND_TIMEOUT_MS = 5_000;

export interface LostRun {
  /** Which booted instance ran it (1, 2, ...). */
  readonly app: number;
  readonly key: string;
  readonly attempt: number;
  readonly at: number;
}

/** Every run of LOST_TOPIC in this test file, in the order they started. */
export const lostRuns: LostRun[] = [];
let apps = 0;

@Injectable()
export class LostRunHandlers {
  private readonly app = ++apps;

  @OnDelayExpired(LOST_TOPIC, { attempts: 1, concurrency: 50 })
  run(context: DelayContext): void {
    lostRuns.push({ app: this.app, key: context.key, attempt: context.attempt, at: Date.now() });
  }
}

/** What became of the actions of `keys`: how many runs each had, their attempts, what is left pending and dead. */
export interface LostOutcome {
  readonly perKey: number[];
  readonly attempts: number[];
  readonly pending: number;
  readonly dead: number;
}

export interface LostClaimRig {
  readonly server: TestPostgresServer;
  /** A proxy in front of the server, closed after each test. */
  startProxy(): Promise<TcpFaultProxy>;
  /** A fresh schema name for one test. */
  schema(prefix: string): string;
  /** An instance on `url` (the server's or the proxy's), consuming or not. */
  instance(schema: string, url: string, consume: boolean, shutdownTimeout?: string): Promise<INestApplication>;
  /** Closes an instance now (it is not closed again after the test). */
  close(app: INestApplication): Promise<void>;
  /** Waits for every action to be acked (up to `withinMs`), then half a second in which a late duplicate would show. */
  outcome(producer: DelayService, keys: readonly string[], withinMs: number): Promise<LostOutcome>;
}

/** Registers the file's hooks (server, proxy, instances) and returns the rig. */
export function lostClaimRig(): LostClaimRig {
  let server: TestPostgresServer | undefined;
  let proxy: TcpFaultProxy | undefined;
  const booted: INestApplication[] = [];
  let schemas = 0;

  beforeAll(async () => {
    server = await TestPostgresServer.start();
  }, 60_000);

  afterEach(async () => {
    for (const app of booted.splice(0)) await app.close();
    await proxy?.close();
    proxy = undefined;
  });

  afterAll(async () => {
    await server?.dispose();
  });

  const started = (): TestPostgresServer => {
    if (!server) throw new Error('the rig starts its server in beforeAll');
    return server;
  };

  return {
    get server() {
      return started();
    },
    async startProxy() {
      proxy = await TcpFaultProxy.start(started().port);
      return proxy;
    },
    schema(prefix) {
      return `${prefix}_${process.pid}_${++schemas}`;
    },
    async instance(schema, url, consume, shutdownTimeout = '2s') {
      const app = await bootDelayApp({ driver: { type: 'postgres', connectionString: url, schema, lease: '5s', commandTimeout: COMMAND_TIMEOUT_MS }, consume, shutdownTimeout }, [LostRunHandlers]);
      booted.push(app);
      return app;
    },
    async close(app) {
      booted.splice(booted.indexOf(app), 1);
      await app.close();
    },
    async outcome(producer, keys, withinMs) {
      await pollUntil(async () => (await producer.count(LOST_TOPIC)) === 0, 'every action acked', withinMs, 20).catch(() => undefined);
      await sleep(500);
      return {
        perKey: [...new Set(keys.map((key) => lostRuns.filter((run) => run.key === key).length))],
        attempts: [...new Set(lostRuns.map((run) => run.attempt))],
        pending: await producer.count(LOST_TOPIC),
        dead: await producer.countDead(LOST_TOPIC),
      };
    },
  };
}

/** The URL of a proxy in front of the server. */
export function proxiedUrl(proxy: TcpFaultProxy): string {
  return `postgres://postgres@127.0.0.1:${proxy.port}/postgres`;
}
