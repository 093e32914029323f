// A claim's reply is held on the way (the database committed it) while the instance shuts down (the Redis driver's
// test/faults/stalled-claim-at-shutdown.e2e-spec.ts): drain stops waiting for the claim after
// `shutdownTimeout` (short), while the claim still settles within `commandTimeout` (long). The reply arrives
// before that: the claim committed, and what it took must not be left to its lease (with `attempts: 1` a second
// instance would then bury it), nor run by an instance that is closing and can no longer record its outcome.
import { INestApplication, Injectable } from '@nestjs/common';
import { DelayContext, DelayService, OnDelayExpired } from 'nestjs-delay';
import { bootDelayApp, pollUntil, sleep } from '../conformance/support/driver-fixture';
import { TestPostgresServer } from '../support/postgres-server';
import { TcpFaultProxy } from './support/tcp-fault-proxy';

const TOPIC = 'pgstall.once';
const KEYS = Array.from({ length: 10 }, (_, n) => `k${n}`);
const COMMAND_TIMEOUT_MS = 5_000;

interface Run {
  readonly app: number;
  readonly key: string;
  readonly attempt: number;
  readonly at: number;
}

const runs: Run[] = [];
let apps = 0;

@Injectable()
class Handlers {
  private readonly app = ++apps;

  @OnDelayExpired(TOPIC, { attempts: 1, concurrency: 50 })
  run(context: DelayContext): void {
    runs.push({ app: this.app, key: context.key, attempt: context.attempt, at: Date.now() });
  }
}

describe('postgres: a claim\'s reply held on the way while the instance shuts down', () => {
  let server: TestPostgresServer;
  let proxy: TcpFaultProxy | undefined;
  const booted: INestApplication[] = [];

  beforeAll(async () => {
    server = await TestPostgresServer.start();
  }, 60_000);

  afterEach(async () => {
    for (const app of booted.splice(0)) await app.close();
    await proxy?.close();
    proxy = undefined;
  });

  afterAll(async () => {
    await server.dispose();
  });

  async function instance(schema: string, url: string, consume: boolean): Promise<INestApplication> {
    const app = await bootDelayApp({ driver: { type: 'postgres', connectionString: url, schema, lease: '5s', commandTimeout: COMMAND_TIMEOUT_MS }, consume, shutdownTimeout: '300ms' }, [Handlers]);
    booted.push(app);
    return app;
  }

  it('the claim answered after drain gave up on it: every action runs once, as attempt 1, soon after the close; none dead', async () => {
    runs.length = 0;
    const schema = `stall_${process.pid}`;
    const producer = (await instance(schema, server.url, false)).get(DelayService);
    for (const key of KEYS) await producer.schedule(TOPIC, key, { delay: 1 });
    await sleep(50);
    proxy = await TcpFaultProxy.start(server.port);
    // The worker's first claim takes every action (all due): the server commits it, its reply stays on the way.
    const held = proxy.holdReplies('.claim_taken($1::');
    const worker = await instance(schema, `postgres://postgres@127.0.0.1:${proxy.port}/postgres`, true);
    await pollUntil(() => held.at.length === 1, 'the claim of the due actions', 5_000, 10);
    const closeStarted = Date.now();
    booted.splice(booted.indexOf(worker), 1);
    const closing = worker.close();
    // Drain gives up on the claim after shutdownTimeout (300 ms); the reply arrives well within commandTimeout.
    await sleep(2_000);
    proxy.heal();
    await closing;
    const closedAt = Date.now();
    await instance(schema, server.url, true);
    await pollUntil(async () => (await producer.count(TOPIC)) === 0, 'every action acked', 15_000, 20).catch(() => undefined);
    // A pause in which a late duplicate would show.
    await sleep(500);
    const outcome = {
      perKey: [...new Set(KEYS.map((key) => runs.filter((run) => run.key === key).length))],
      attempts: [...new Set(runs.map((run) => run.attempt))],
      pending: await producer.count(TOPIC),
      dead: await producer.countDead(TOPIC),
    };
    const lastRun = runs.length > 0 ? Math.max(...runs.map((run) => run.at)) - closedAt : -1;
    process.stdout.write(
      `  [postgres stalled claim] closed in ${closedAt - closeStarted} ms; ${runs.length} runs (${runs.filter((run) => run.at < closedAt).length} by the closing instance), the last ${lastRun} ms after the close\n`,
    );
    expect(outcome).toEqual({ perKey: [1], attempts: [1], pending: 0, dead: 0 });
  }, 60_000);
});
