// Shutdown's hand-back of what claims whose reply was lost took (postgres): the hand-back (release) itself loses its
// reply with its connection, once or more, after the server committed it, and so may the ask (recover) before it.
// Sent again, it changes nothing (it names tokens): every action is back, due now, as attempt 1, and runs once on a
// healthy instance at once; none is dead; the close stays well within the command timeout.
import { INestApplication, Injectable } from '@nestjs/common';
import { DelayContext, DelayService, OnDelayExpired } from 'nestjs-delay';
import { bootDelayApp, pollUntil, sleep } from '../conformance/support/driver-fixture';
import { TestPostgresServer } from '../support/postgres-server';
import { TcpFaultProxy } from './support/tcp-fault-proxy';

const TOPIC = 'pghandback.once';
const KEYS = Array.from({ length: 20 }, (_, n) => `k${n}`);
const COMMAND_TIMEOUT_MS = 5_000;

interface Run {
  readonly key: string;
  readonly attempt: number;
  readonly at: number;
}

const runs: Run[] = [];

@Injectable()
class Handlers {
  @OnDelayExpired(TOPIC, { attempts: 1, concurrency: 50 })
  run(context: DelayContext): void {
    runs.push({ key: context.key, attempt: context.attempt, at: Date.now() });
  }
}

describe('postgres: the shutdown hand-back of a lost claim loses its reply', () => {
  let server: TestPostgresServer;
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
    await server.dispose();
  });

  async function instance(schema: string, url: string, consume: boolean): Promise<INestApplication> {
    const app = await bootDelayApp({ driver: { type: 'postgres', connectionString: url, schema, lease: '5s', commandTimeout: COMMAND_TIMEOUT_MS }, consume, shutdownTimeout: '2s' }, [Handlers]);
    booted.push(app);
    return app;
  }

  it.each([
    [0, 1],
    [1, 1],
    [0, 3],
  ])('%i ask(s) and %i hand-back(s) reset after the server ran them: every action runs once, as attempt 1, at once elsewhere; none dead', async (recoverResets, releaseResets) => {
    runs.length = 0;
    const schema = `handback_${process.pid}_${++schemas}`;
    const producer = (await instance(schema, server.url, false)).get(DelayService);
    for (const key of KEYS) await producer.schedule(TOPIC, key, { delay: 1 });
    proxy = await TcpFaultProxy.start(server.port);
    // Every claim's reply is lost until the worker has shut down.
    const claims = proxy.resetOnReply('.claim_taken($1::', 1_000);
    const worker = await instance(schema, `postgres://postgres@127.0.0.1:${proxy.port}/postgres`, true);
    await pollUntil(() => claims.at.length >= 2, 'two claims to be reset', 5_000, 10);
    const recovers = proxy.resetOnReply('.recover($1::', recoverResets);
    const releases = proxy.resetOnReply('.release($1::', releaseResets);
    const closing = Date.now();
    booted.splice(booted.indexOf(worker), 1);
    await worker.close();
    const closedAt = Date.now();
    expect(runs).toEqual([]);
    await instance(schema, server.url, true);
    await pollUntil(async () => (await producer.count(TOPIC)) === 0, 'every action acked', 10_000, 20).catch(() => undefined);
    // A pause in which a late duplicate would show.
    await sleep(500);
    const outcome = {
      perKey: [...new Set(KEYS.map((key) => runs.filter((run) => run.key === key).length))],
      attempts: [...new Set(runs.map((run) => run.attempt))],
      pending: await producer.count(TOPIC),
      dead: await producer.countDead(TOPIC),
    };
    const ranWithin = runs.length > 0 ? Math.max(...runs.map((run) => run.at)) - closedAt : -1;
    process.stdout.write(
      `  [postgres hand-back] ${recovers.at.length} ask(s), ${releases.at.length} hand-back(s) reset: closed in ${closedAt - closing} ms; ${runs.length} runs, the last ${ranWithin} ms after the close\n`,
    );
    expect(outcome).toEqual({ perKey: [1], attempts: [1], pending: 0, dead: 0 });
    expect({ recovers: recovers.at.length, releases: releases.at.length }).toEqual({ recovers: recoverResets, releases: releaseResets });
    // Handed back at once (not left to the 5 s lease), and the close is not held for the command timeout.
    expect(ranWithin).toBeLessThan(4_000);
    expect(closedAt - closing).toBeLessThan(COMMAND_TIMEOUT_MS - 1_000);
  }, 40_000);
});
