// The shard benchmark: one hot topic on a local Redis Cluster of 3 masters
// (started by the bench on free ports, no replicas), kept in 1 shard and
// spread over 3, 6 and 12. For each count: the schedule rate through
// DelayService (100 calls in flight), the drain rate of a burst due at one
// moment (an @OnDelayExpired handler in this process, concurrency 100,
// claimBatch 100), and what each master did meanwhile: its share of the
// commands (INFO commandstats) and its CPU seconds (INFO cpu).
//
//   npm run bench:redis-shards
//   BENCH_SHARDS_QUICK=1 npm run bench:redis-shards   (a smoke run, figures not comparable)
//
// The machine the figures in BENCHMARKS.md come from has 2 cores for the
// bench process and three redis-servers, so the point is where the load
// goes, not a 3x wall-clock gain; the 1-shard rows give the ceiling one
// master (one core) puts on one topic. See BENCHMARKS.md.
import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Cluster } from 'ioredis';
import { ClusterWork } from './redis/cluster-work';
import type { PhaseWork } from './redis/cluster-work';
import { makePayload, PAYLOAD_BYTES } from './redis/protocol';
import { pump } from './redis/pump';
import { BenchRedisCluster } from './redis/redis-cluster';
import type { ClusterMaster } from './redis/redis-cluster';
import { BenchRedisServer } from './redis/redis-server';
import { parseInfo } from './redis/redis-stats';
import { CONSUMER_CONCURRENCY, HOT_TOPIC, RunRecorder, startShardApp } from './redis/shard-apps';
import type { ShardApp } from './redis/shard-apps';
import { fmt, libraryUnderTest, loadAverage, markdownTable } from './support';

const QUICK = process.env.BENCH_SHARDS_QUICK === '1';

const SETTINGS = {
  masters: 3,
  shardCounts: [1, 3, 6, 12],
  /** Rounds over every count, ascending then descending. */
  rounds: QUICK ? 1 : 2,
  /** Schedule calls in flight at once. */
  inFlight: 100,
  scheduleWarmupMs: QUICK ? 200 : 1_000,
  scheduleMs: QUICK ? 1_000 : 4_000,
  /** Far enough that nothing scheduled in the schedule phase falls due. */
  farDelayMs: 3_600_000,
  burstCount: QUICK ? 2_000 : 20_000,
  claimBatch: 100,
  /** How long a burst may take to drain before the run fails. */
  drainTimeoutMs: 120_000,
};

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Orders as a shop would key them. */
const orderKey = (n: number): string => `order:${n}`;

interface Placement {
  /** Per master (A, B, C): the shards (hash tags) of the hot topic it holds. */
  readonly shards: number[];
  /** Per master: the actions it holds. */
  readonly actions: number[];
}

interface ScheduleResult {
  readonly rate: number;
  readonly scheduled: number;
  readonly work: PhaseWork;
  readonly placement: Placement;
}

interface DrainResult {
  readonly count: number;
  readonly rate: number;
  /** From the resume to the last handler run. */
  readonly drainMs: number;
  readonly lost: number;
  readonly duplicates: number;
  /** DelayService.count after the drain: what the topic still holds. */
  readonly left: number;
  readonly work: PhaseWork;
}

interface ShardRun {
  readonly shards: number;
  readonly schedule: ScheduleResult;
  readonly drain: DrainResult;
}

class Bench {
  private readonly clients: Cluster[] = [];

  constructor(readonly cluster: BenchRedisCluster) {}

  get masters(): readonly ClusterMaster[] {
    return this.cluster.masters;
  }

  /** An app on a Cluster client of its own, under `prefix`; the client is closed with the app. */
  async app(prefix: string, shards: number, recorder?: RunRecorder): Promise<ShardApp> {
    const client = this.cluster.client();
    this.clients.push(client);
    const app = await startShardApp({ type: 'redis', client, prefix, shards, claimBatch: SETTINGS.claimBatch }, recorder);
    return {
      service: app.service,
      close: async () => {
        await app.close();
        await client.quit();
        this.clients.splice(this.clients.indexOf(client), 1);
      },
    };
  }

  /** Where the hot topic's shards and actions are: envelope hashes found on each master (SCAN), their sizes (HLEN). */
  async placement(prefix: string): Promise<Placement> {
    const perMaster = await Promise.all(
      this.masters.map(async (master) => {
        const keys: string[] = [];
        let cursor = '0';
        do {
          const [next, batch] = await master.redis.scan(cursor, 'MATCH', `${prefix}:{${HOT_TOPIC}*}:env`, 'COUNT', 1000);
          cursor = next;
          keys.push(...batch);
        } while (cursor !== '0');
        const sizes = await Promise.all(keys.map((key) => master.redis.hlen(key)));
        return { shards: keys.length, actions: sizes.reduce((sum, size) => sum + size, 0) };
      }),
    );
    return { shards: perMaster.map((entry) => entry.shards), actions: perMaster.map((entry) => entry.actions) };
  }

  async close(): Promise<void> {
    await Promise.all(this.clients.map((client) => client.quit().catch(() => undefined)));
  }
}

// ---- the phases ------------------------------------------------------------

/** (a) schedule through DelayService, 100 in flight, for a fixed time; every action due in an hour. */
async function measureSchedule(bench: Bench, shards: number, round: number): Promise<ScheduleResult> {
  const prefix = `r${round}-shards${shards}-schedule`;
  const app = await bench.app(prefix, shards);
  try {
    let next = 0;
    const scheduleOne = async (): Promise<void> => {
      const key = orderKey(next++);
      await app.service.schedule(HOT_TOPIC, key, { delay: SETTINGS.farDelayMs, payload: makePayload(key, 0) });
    };
    await pump(SETTINGS.inFlight, { untilMs: performance.now() + SETTINGS.scheduleWarmupMs }, scheduleOne);
    const work = new ClusterWork(bench.masters);
    await work.begin();
    const { done, seconds } = await pump(SETTINGS.inFlight, { untilMs: performance.now() + SETTINGS.scheduleMs }, scheduleOne);
    const phase = await work.end();
    return { rate: done / seconds, scheduled: done, work: phase, placement: await bench.placement(prefix) };
  } finally {
    await app.close();
  }
}

/** Untimed schedules on 1 and on 12 shards before the first measured phase, so the first count measured does not pay for a cold process. */
async function warmUp(bench: Bench): Promise<void> {
  for (const shards of [1, 12]) {
    const app = await bench.app(`warmup-shards${shards}`, shards);
    try {
      let next = 0;
      await pump(SETTINGS.inFlight, { untilMs: performance.now() + SETTINGS.scheduleWarmupMs }, async () => {
        const key = orderKey(next++);
        await app.service.schedule(HOT_TOPIC, key, { delay: SETTINGS.farDelayMs, payload: makePayload(key, 0) });
      });
    } finally {
      await app.close();
    }
  }
  await bench.cluster.flushAll();
}

/**
 * (b) a burst: `burstCount` actions all due at one moment, scheduled while
 * the topic is paused (so the burst is complete however slowly it was
 * written), then the topic is resumed and this process's handler drains it.
 * Timed from the resume to the last handler run.
 */
async function measureDrain(bench: Bench, shards: number, round: number): Promise<DrainResult> {
  const prefix = `r${round}-shards${shards}-burst`;
  const recorder = new RunRecorder();
  const app = await bench.app(prefix, shards, recorder);
  try {
    const count = SETTINGS.burstCount;
    await app.service.pause(HOT_TOPIC);
    const dueAt = Date.now();
    await pump(SETTINGS.inFlight, { count }, async (n) => {
      const key = orderKey(n);
      await app.service.schedule(HOT_TOPIC, key, { at: dueAt, payload: makePayload(key, dueAt) });
    });
    const work = new ClusterWork(bench.masters);
    await work.begin();
    const resumedAt = Date.now();
    await app.service.resume(HOT_TOPIC);
    const deadline = Date.now() + SETTINGS.drainTimeoutMs;
    while (recorder.runs < count && Date.now() < deadline) await sleep(5);
    const phase = await work.end();
    const drainMs = recorder.lastEndMs - resumedAt;
    // Time for the last acks, and for any run done twice to show.
    await sleep(500);
    let lost = 0;
    for (let n = 0; n < count; n++) if (!recorder.runsByKey.has(orderKey(n))) lost++;
    let duplicates = 0;
    for (const runs of recorder.runsByKey.values()) duplicates += runs - 1;
    const left = await app.service.count(HOT_TOPIC);
    return { count, rate: count / (drainMs / 1000), drainMs, lost, duplicates, left, work: phase };
  } finally {
    await app.close();
  }
}

// ---- printing ----------------------------------------------------------------

const perMaster = (values: readonly number[], format: (value: number) => string): string => values.map(format).join(' / ');
const percent = (part: number, whole: number): string => `${fmt((part / whole) * 100)}%`;
const sum = (values: readonly number[]): number => values.reduce((total, value) => total + value, 0);

/** One phase over every round of a shard count: per master, commands and CPU seconds added up; wall and client CPU too. */
interface PhaseTotal {
  readonly names: readonly string[];
  readonly calls: number[];
  readonly scriptCalls: number[];
  readonly cpuSeconds: number[];
  readonly wallSeconds: number;
  readonly clientCpuSeconds: number;
  readonly actions: number;
}

function total(works: ReadonlyArray<{ work: PhaseWork; actions: number }>): PhaseTotal {
  const names = works[0].work.masters.map((master) => master.name);
  return {
    names,
    calls: names.map((_, n) => sum(works.map(({ work }) => work.masters[n].calls))),
    scriptCalls: names.map((_, n) => sum(works.map(({ work }) => work.masters[n].scriptCalls))),
    cpuSeconds: names.map((_, n) => sum(works.map(({ work }) => work.masters[n].cpuSeconds))),
    wallSeconds: sum(works.map(({ work }) => work.wallSeconds)),
    clientCpuSeconds: sum(works.map(({ work }) => work.clientCpuSeconds)),
    actions: sum(works.map(({ actions }) => actions)),
  };
}

/** The master with the most CPU seconds in a phase. */
function busiest(phase: PhaseTotal): number {
  return phase.cpuSeconds.indexOf(Math.max(...phase.cpuSeconds));
}

const rounds = (values: readonly number[]): string => values.map((value) => fmt(value)).join(' / ');

function rateTable(byCount: ReadonlyMap<number, readonly ShardRun[]>, names: string): string {
  const rows = [...byCount].map(([shards, runs]) => {
    const { placement } = runs[0].schedule;
    const scheduleRates = runs.map((run) => run.schedule.rate);
    const drainRates = runs.map((run) => run.drain.rate);
    return [
      String(shards),
      placement.shards.join(' / '),
      perMaster(placement.actions, (actions) => percent(actions, sum(placement.actions))),
      fmt(sum(scheduleRates) / runs.length),
      rounds(scheduleRates),
      fmt(sum(drainRates) / runs.length),
      rounds(drainRates),
      rounds(runs.map((run) => run.drain.drainMs)),
      [sum(runs.map((run) => run.drain.lost)), sum(runs.map((run) => run.drain.duplicates)), sum(runs.map((run) => run.drain.left))].join(' / '),
    ];
  });
  return markdownTable(
    [
      'shards',
      `shards on ${names}`,
      `actions on ${names}`,
      'schedule/s (mean)',
      'schedule/s per round',
      'drain/s (mean)',
      'drain/s per round',
      'drain ms per round',
      'lost / duplicated / left',
    ],
    rows,
    [true, true, true, true, true, true, true, true, true],
  );
}

function workTable(byCount: ReadonlyMap<number, readonly ShardRun[]>, names: string, pick: (run: ShardRun) => { work: PhaseWork; actions: number }): string {
  const rows = [...byCount].map(([shards, runs]) => {
    const phase = total(runs.map(pick));
    const top = busiest(phase);
    return [
      String(shards),
      fmt(phase.wallSeconds, 2),
      perMaster(phase.calls, (calls) => percent(calls, sum(phase.calls))),
      perMaster(phase.cpuSeconds, (seconds) => fmt(seconds, 2)),
      `${phase.names[top]} ${percent(phase.cpuSeconds[top], phase.wallSeconds)}`,
      fmt((sum(phase.cpuSeconds) * 1e6) / phase.actions, 1),
      fmt(sum(phase.scriptCalls) / phase.actions, 3),
      percent(phase.clientCpuSeconds, phase.wallSeconds),
    ];
  });
  return markdownTable(
    ['shards', 'wall s', `commands on ${names}`, `CPU s on ${names}`, 'busiest master: CPU s / wall s', 'Redis CPU µs per action (all masters)', 'script calls per action', 'bench process: CPU s / wall s'],
    rows,
    [true, true, true, true, true, true, true, true],
  );
}

/** What one master (one core) allows one topic, from the 1-shard runs: the topic's master's CPU per action. */
function ceilingLines(byCount: ReadonlyMap<number, readonly ShardRun[]>): string[] {
  const runs = byCount.get(1);
  if (runs === undefined) return [];
  const phases: Array<[string, PhaseTotal]> = [
    ['schedule', total(runs.map((run) => ({ work: run.schedule.work, actions: run.schedule.scheduled })))],
    ['drain', total(runs.map((run) => ({ work: run.drain.work, actions: run.drain.count })))],
  ];
  return phases.map(([name, phase]) => {
    const top = busiest(phase);
    const usecPerAction = (phase.cpuSeconds[top] * 1e6) / phase.actions;
    return (
      `- ${name}, 1 shard: master ${phase.names[top]} did ${percent(phase.calls[top], sum(phase.calls))} of the commands, ` +
      `at ${percent(phase.cpuSeconds[top], phase.wallSeconds)} of one core (${fmt(phase.cpuSeconds[top], 2)} CPU s in ${fmt(phase.wallSeconds, 2)} s) ` +
      `for ${fmt(phase.actions / phase.wallSeconds)} actions/s: ${fmt(usecPerAction, 1)} µs of its CPU per action, so one core caps the topic at about ${fmt(1e6 / usecPerAction)}/s`
    );
  });
}

// ---- main --------------------------------------------------------------------

async function main(): Promise<void> {
  // Refused before any server starts when the library is another checkout's.
  const library = libraryUnderTest();
  const startedAt = performance.now();
  const loadAtStart = loadAverage();
  const npmScript = process.env.npm_lifecycle_event;
  const script = relative(process.cwd(), process.argv[1]);
  const overrides = ['BENCH_SHARDS_QUICK'].filter((name) => process.env[name] !== undefined).map((name) => `${name}=${process.env[name]} `);
  const command = `${overrides.join('')}${npmScript ? `npm run ${npmScript}  ->  ` : ''}node ${[...process.execArgv, script].join(' ')}`;
  const ioredisVersion = (JSON.parse(readFileSync(require.resolve('ioredis/package.json'), 'utf8')) as { version: string }).version;

  const cluster = await BenchRedisCluster.start(SETTINGS.masters);
  const bench = new Bench(cluster);
  try {
    const names = cluster.masters.map((master) => master.name).join('/');
    const serverInfo = parseInfo(await cluster.masters[0].redis.info('server'));
    console.log('# nestjs-delay: one hot topic sharded over a Redis Cluster\n');
    console.log(`- date: ${new Date().toISOString()}`);
    console.log(`- command: ${command}${QUICK ? '  (QUICK: smaller and shorter, not for comparison)' : ''}`);
    console.log(`- ${library}`);
    console.log(`- node ${process.version}, ${process.platform}/${process.arch}; ioredis ${ioredisVersion} (Cluster client)`);
    console.log(`- redis-server ${serverInfo.get('redis_version')} (${BenchRedisServer.version()}), no persistence`);
    console.log(
      `- cluster: ${SETTINGS.masters} masters, no replicas, spawned on free ports: ${cluster.masters.map((master) => `${master.name} slots ${master.slots.map(([from, to]) => `${from}-${to}`).join(',')}`).join('; ')}`,
    );
    console.log(`- cpus: ${availableParallelism()} available (${cpus()[0]?.model ?? 'unknown'}), memory ${fmt(totalmem() / 2 ** 30, 1)} GiB; load average (1 / 5 / 15 min) ${loadAtStart}`);
    console.log(
      `- topic "${HOT_TOPIC}", keys order:<n>, payload ${PAYLOAD_BYTES} B of JSON; schedule: DelayService.schedule with ${SETTINGS.inFlight} in flight for ${fmt(SETTINGS.scheduleMs / 1000, 1)} s after ${fmt(SETTINGS.scheduleWarmupMs / 1000, 1)} s of warm-up, due in an hour`,
    );
    console.log(
      `- drain: ${fmt(SETTINGS.burstCount)} actions due at one moment, scheduled the same way while the topic is paused, then resumed; one @OnDelayExpired handler in the bench process, concurrency ${CONSUMER_CONCURRENCY}, claimBatch ${SETTINGS.claimBatch}; timed from the resume to the last run`,
    );
    console.log(
      `- ${SETTINGS.rounds} round(s) over the counts (ascending, then descending); one Nest application and one Cluster client per phase, a key prefix of their own, FLUSHALL on every master between phases`,
    );
    console.log('- commands: INFO commandstats calls summed over every command (the commands a script runs count too), CPU: INFO cpu user + sys; CPU s / wall s of 100% is one core');
    console.log('');

    await warmUp(bench);
    const byCount = new Map<number, ShardRun[]>(SETTINGS.shardCounts.map((shards) => [shards, []]));
    for (let round = 0; round < SETTINGS.rounds; round++) {
      // Ascending, then descending: no count always runs first, on a colder process or a quieter machine.
      const order = round % 2 === 0 ? SETTINGS.shardCounts : [...SETTINGS.shardCounts].reverse();
      for (const shards of order) {
        const schedule = await measureSchedule(bench, shards, round);
        await cluster.flushAll();
        const drain = await measureDrain(bench, shards, round);
        await cluster.flushAll();
        byCount.get(shards)?.push({ shards, schedule, drain });
        console.log(`  round ${round + 1}, ${shards} shard(s): schedule ${fmt(schedule.rate)}/s, drain ${fmt(drain.rate)}/s (load average ${loadAverage()})`);
      }
    }

    console.log('\n## Rates, and where the shards and actions landed\n');
    console.log(rateTable(byCount, names));
    console.log(`\n## Schedule phase: each master's share of the commands and its CPU (all rounds)\n`);
    console.log(workTable(byCount, names, (run) => ({ work: run.schedule.work, actions: run.schedule.scheduled })));
    console.log(`\n## Drain phase: each master's share of the commands and its CPU (all rounds)\n`);
    console.log(workTable(byCount, names, (run) => ({ work: run.drain.work, actions: run.drain.count })));
    console.log('\n## The ceiling one master puts on one topic\n');
    console.log(ceilingLines(byCount).join('\n'));
    const clean = [...byCount.values()].flat().every((run) => run.drain.lost === 0 && run.drain.duplicates === 0 && run.drain.left === 0);
    console.log(`- lost / duplicated / left over, every drain: ${clean ? 'none' : 'SOME (see the table)'}`);
    console.log(`- machine load average (1 / 5 / 15 min): ${loadAtStart} at the start, ${loadAverage()} at the end`);
    console.log(`\ntotal time ${fmt((performance.now() - startedAt) / 1000, 1)} s`);
  } finally {
    await bench.close();
    await cluster.dispose();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
