// Recurring schedules across real processes on one Redis: three consumers,
// 200 schedules every 1, 2 or 3 s for 30 s (missed 'all', overlap 'allow', so
// every scheduled instant must run), a kill -9 of a consumer and a SIGKILL and
// restart of redis-server (AOF, fsync always) in the middle. Then a rolling
// deploy where old and new code declare different @Recurring sets.
import { fleetSuite, report, sleep } from './support/instances';
import { check, instantsOf, runRecurringFleet } from './support/recurring-fleet';

const TOPIC = 'reports.recurring';
const SCHEDULES = 200;
/** The run's length. The spec keeps its own wall time down elsewhere: three processes rather than four, started together, and the 200 upserts and removals sent at once. */
const RUN_MS = 30_000;

const suite = fleetSuite({ appendonly: true });

it(`${SCHEDULES} schedules every 1-3 s on 3 instances for ${RUN_MS / 1000} s, a kill -9 and a Redis restart: no occurrence twice, none missed`, async () => {
  const server = suite.server();
  await runRecurringFleet({
    fleet: suite.fleet('recurring', 'unused.one-off'),
    options: { lease: '2s' },
    restartStore: async () => {
      await server.kill();
      await sleep(1_500);
      await server.boot();
    },
    topic: TOPIC,
    schedules: SCHEDULES,
    runMs: RUN_MS,
    settleMs: 4_000,
    label: 'recurring',
  });
}, 240_000);

it('a rolling deploy where old and new code declare different @Recurring sets: no occurrence twice, none missed while declared', async () => {
  const fleet = suite.fleet('rolling', 'unused.one-off');
  // Old code declares A and B; new code keeps B (same cadence) and adds C.
  const oldCode = { consume: true, lease: '2s', declared: [{ topic: 'rec.a', every: 1000 }, { topic: 'rec.b', every: 2000 }] };
  const newCode = { consume: true, lease: '2s', declared: [{ topic: 'rec.b', every: 2000 }, { topic: 'rec.c', every: 1000 }] };
  const [old1, old2] = await fleet.spawnAll(['old1', 'old2'], oldCode);
  await sleep(4_000);
  const new1 = await fleet.spawn('new1', newCode);
  await sleep(2_000);
  await old1.close();
  const new2 = await fleet.spawn('new2', newCode);
  await sleep(2_000);
  await old2.close();
  await sleep(4_000);
  await Promise.all([new1.close(), new2.close()]);

  const result = check(fleet.starts, (key) => (key.startsWith('rec.b/') ? 2000 : 1000));
  report(`rolling deploy: ${result.occurrences} occurrences, split ${JSON.stringify(fleet.split())}`);
  expect(result.sameAttemptTwice).toEqual([]);
  expect(result.redelivered).toEqual([]);
  // B ran throughout, on old then new instances, every 2 s with no gap; C from when new code came; A until old code left.
  expect(result.gaps).toEqual([]);
  const b = fleet.startsOf('rec.b/default');
  expect(new Set(b.map((start) => start.instance.slice(0, 3)))).toEqual(new Set(['old', 'new']));
  expect(instantsOf(fleet, 'rec.b/default').length).toBeGreaterThanOrEqual(6);
  expect(instantsOf(fleet, 'rec.c/default').length).toBeGreaterThanOrEqual(6);
  expect(fleet.startsOf('rec.c/default').every((start) => start.instance.startsWith('new'))).toBe(true);
  expect(fleet.startsOf('rec.a/default').every((start) => start.instance.startsWith('old'))).toBe(true);
}, 120_000);
