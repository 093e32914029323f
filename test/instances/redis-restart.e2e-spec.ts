// Redis with appendonly yes (appendfsync always) is SIGKILLed and started
// again on the same port and data folder. Every action pending at the kill
// still runs exactly once after the restart (those that fell due while Redis
// was down, and those due later), the runs acked before the kill never run
// again, and the instances reconnect, wake-ups included, on their own.
import { fleetSuite, report, sleep, summary } from './support/instances';
import type { ScheduleItem } from './support/protocol';

const TOPIC = 'order.unpaid';
/** Run and acked before the kill. */
const DONE = 100;
/** Pending at the kill, due while Redis is down. */
const OVERDUE = 100;
/** Pending at the kill, due after the restart. */
const LATER = 100;
/** Scheduled after the restart, while the consumers sleep with nothing to do. */
const AFTER = 50;
const DOWN_MS = 1_500;
/** How long after the start of the pending batch's scheduling its first action is due. */
const SETUP_MS = 3_000;

const suite = fleetSuite({ appendonly: true });

it('SIGKILL of redis-server (AOF, fsync always) and a restart: every pending action still runs exactly once', async () => {
  const server = suite.server();
  const current = suite.fleet('restart', TOPIC);
  const [producer] = await Promise.all([current.spawn('producer', { consume: false }), current.spawnAll(['c1', 'c2'], { consume: true, lease: '2s' })]);
  const dueOf = new Map<string, number>();
  const batch = (name: string, size: number, from: number, step: number): ScheduleItem[] =>
    Array.from({ length: size }, (_, n) => {
      const item = { key: `${name}-${n}`, at: from + n * step, payload: { armId: `${name}-${n}` } };
      dueOf.set(item.key, item.at);
      return item;
    });

  await producer.call({ op: 'scheduleMany', items: batch('done', DONE, Date.now() + 200, 4), parallel: 16 });
  await current.until(() => current.ends.length >= DONE, 10_000, 'the first actions to complete');
  await current.until(async () => (await producer.count()) === 0, 5_000, 'their acks');

  const t0 = Date.now();
  // The pending batch is due from SETUP_MS on: scheduling it through the producer process (fsync always) may take a
  // second or two on a busy machine, and nothing of it may be due before the kill.
  const overdueFrom = t0 + SETUP_MS;
  const pendingItems = [...batch('overdue', OVERDUE, overdueFrom, 4), ...batch('later', LATER, overdueFrom + OVERDUE * 4 + DOWN_MS + 1_500, 10)];
  await producer.call({ op: 'scheduleMany', items: pendingItems, parallel: 16 });
  const killedAt = Date.now();
  await server.kill();
  // Setup was quick enough for the test to mean something: nothing of the pending batch was due yet at the kill.
  expect(killedAt).toBeLessThan(overdueFrom);
  // Down at least DOWN_MS, and until every overdue action fell due.
  await sleep(Math.max(DOWN_MS, overdueFrom + OVERDUE * 4 + 100 - Date.now()));
  // Taken before the boot: a consumer may reconnect and start a run before boot() returns on a busy machine.
  const bootedAt = Date.now();
  await server.boot();

  await current.until(() => current.ends.length >= DONE + OVERDUE + LATER, 20_000, 'the actions pending at the kill to complete');
  // Nothing is pending now: the consumers sleep with no timer armed, so only the wake channel (their
  // subscriber connections, re-subscribed after the restart) can make them claim what comes next.
  await current.until(async () => (await producer.send({ op: 'count' })).ok, 10_000, 'the producer to reconnect');
  await sleep(300);
  const afterItems: ScheduleItem[] = Array.from({ length: AFTER }, (_, n) => ({ key: `after-${n}`, delay: 100 + n * 10, payload: { armId: `after-${n}` } }));
  await producer.call({ op: 'scheduleMany', items: afterItems, parallel: 8 });
  const total = DONE + OVERDUE + LATER + AFTER;
  await current.until(() => current.ends.length >= total, 10_000, `the ${AFTER} actions scheduled after the restart to complete`);
  await sleep(2_500); // more than a lease: nothing runs twice
  const pending = await producer.count();

  const runsByKey = new Map<string, number>();
  for (const start of current.starts) runsByKey.set(start.key, (runsByKey.get(start.key) ?? 0) + 1);
  const twice = [...runsByKey].filter(([, runs]) => runs > 1).map(([key]) => key);
  const expected = [...dueOf.keys(), ...afterItems.map((item) => item.key)];
  const lost = expected.filter((key) => !runsByKey.has(key));
  const early = current.starts.filter((start) => start.firedAt < start.dueAt || start.at < start.dueAt || (dueOf.has(start.key) && start.dueAt !== dueOf.get(start.key)));
  const runsOf = (name: string) => current.starts.filter((start) => start.key.startsWith(`${name}-`));
  const overdueAfterBoot = summary(runsOf('overdue').map((start) => start.at - bootedAt));
  const laterLateness = summary(runsOf('later').map((start) => start.firedAt - start.dueAt));
  const afterLateness = summary(runsOf('after').map((start) => start.firedAt - start.dueAt));
  report(
    `redis SIGKILL with ${OVERDUE + LATER} pending, down ${bootedAt - killedAt} ms: the ${OVERDUE} that fell due meanwhile ran ${overdueAfterBoot.p50}-${overdueAfterBoot.max} ms after the boot, ` +
      `the ${LATER} due later ran ${laterLateness.p50}-${laterLateness.max} ms late, the ${AFTER} scheduled after the restart ${afterLateness.p50}-${afterLateness.max} ms late; ` +
      `${DONE} acked before the kill did not run again; runs ${current.starts.length}, split ${JSON.stringify(current.split())}`,
  );

  expect({ runs: current.starts.length, completed: current.ends.length, pending }).toEqual({ runs: total, completed: total, pending: 0 });
  expect({ twice, lost, early }).toEqual({ twice: [], lost: [], early: [] });
  expect(runsOf('done').every((start) => start.at < killedAt)).toBe(true);
  expect([...runsOf('overdue'), ...runsOf('later')].every((start) => start.at > bootedAt && start.attempt === 1)).toBe(true);
  // Woken through the re-subscribed wake channel, not by the safety re-check (wakeCheck, 10 s by default):
  // the bound leaves room for a busy machine while still telling the two apart.
  expect(afterLateness.max).toBeLessThan(5_000);
}, 60_000);

it('an action scheduled as soon as Redis is back, before idle consumers have reconnected, still runs once they do', async () => {
  const server = suite.server();
  const current = suite.fleet('reconnect', TOPIC);
  // The producer reconnects at once; the consumers only 6 s after they lose Redis (room for a busy machine to boot
  // Redis and schedule before they are back).
  const consumerReconnectMs = 6_000;
  const [producer] = await Promise.all([
    current.spawn('producer', { consume: false, reconnectDelayMs: 50 }),
    current.spawnAll(['c1', 'c2'], { consume: true, reconnectDelayMs: consumerReconnectMs }),
  ]);
  await producer.call({ op: 'schedule', key: 'before', delay: 100, payload: { armId: 'before' } });
  await current.until(() => current.endsOf('before').length === 1, 10_000, 'the first action');
  // Idle now: nothing pending, so no consumer has a timer armed; only a wake-up (or a reconnect) makes it look.
  await sleep(300);

  const killedAt = Date.now();
  await server.kill();
  await sleep(500);
  await server.boot();
  const bootedAt = Date.now();
  await current.until(async () => (await producer.send({ op: 'count' })).ok, 5_000, 'the producer to reconnect');
  const scheduled = await producer.call({ op: 'schedule', key: 'x', delay: 100, payload: { armId: 'x' } });
  // The wake-up of "x" was published while no consumer was subscribed: it is lost, and the consumers must look on reconnecting.
  expect(scheduled.returnedAt).toBeLessThan(killedAt + consumerReconnectMs - 500);
  await current.until(() => current.endsOf('x').length === 1, 10_000, '"x" to run after the consumers reconnect');
  await sleep(500);

  const run = current.startsOf('x')[0];
  report(`reconnect: Redis back ${bootedAt - killedAt} ms after the kill; "x" scheduled ${scheduled.returnedAt - killedAt} ms after it, while the consumers were still away; it ran ${run.at - killedAt} ms after the kill, on ${run.instance}`);
  expect(current.startsOf('x')).toHaveLength(1);
  expect(run.firedAt).toBeGreaterThanOrEqual(run.dueAt);
  expect(await producer.count()).toBe(0);
}, 40_000);
