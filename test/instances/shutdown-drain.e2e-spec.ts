// Shutting an instance down (app.close()) while its handlers run: it stops
// taking work and waits for them; with a shutdown timeout shorter than a
// handler, the unfinished action is handed back and another instance runs it.
import { fleetSuite, report, sleep } from './support/instances';

const TOPIC = 'order.unpaid';
/**
 * How long the handler abandoned by a shutdown timeout runs: long enough
 * that the second instance, started after the run began, is up before it
 * ends even on a busy machine (a worker process took over 8 s to boot on
 * one, which made the case fail: the handler had ended before the shutdown).
 */
const HOLD_MS = 20_000;

const suite = fleetSuite();

it('app.close() waits for the running handler (drain), and meanwhile new work goes to the other instance', async () => {
  const current = suite.fleet('drain', TOPIC);
  const [first, second] = await current.spawnAll(['c1', 'c2'], { consume: true });
  await first.call({ op: 'schedule', key: 'long', delay: 100, payload: { armId: 'long', holdMs: 1_500 } });
  await current.until(() => current.startsOf('long').length === 1, 10_000, 'the run of "long"');
  const running = current.startsOf('long')[0];
  const closing = running.instance === first.name ? first : second;
  const other = closing === first ? second : first;

  const closed = closing.close();
  await sleep(200);
  // Scheduled while the first instance drains: only the other one may take them.
  const during = Array.from({ length: 20 }, (_, n) => ({ key: `during-${n}`, delay: 50 + n * 20, payload: { armId: `during-${n}` } }));
  await other.call({ op: 'scheduleMany', items: during, parallel: 4 });
  const reply = await closed;
  await current.until(() => current.ends.filter((end) => end.key.startsWith('during-')).length === during.length, 10_000, 'the actions scheduled during the drain');
  await sleep(300);

  const longEnds = current.endsOf('long');
  const closeTook = reply.returnedAt - reply.issuedAt;
  const duringRuns = current.starts.filter((start) => start.key.startsWith('during-'));
  report(`drain: ${closing.name} closed ${closeTook} ms after close() while "long" (1500 ms) ran; its run ended ${reply.returnedAt - (longEnds[0]?.at ?? NaN)} ms before close() returned; ${duringRuns.length} actions scheduled meanwhile ran on ${JSON.stringify(current.split())}`);
  expect(current.startsOf('long')).toHaveLength(1);
  expect(longEnds.map((end) => end.instance)).toEqual([closing.name]);
  // close() returned only once the handler had returned (and been acked).
  expect(longEnds[0].at).toBeLessThanOrEqual(reply.returnedAt);
  expect(closeTook).toBeGreaterThanOrEqual(1_000);
  expect(duringRuns).toHaveLength(during.length);
  expect(duringRuns.every((start) => start.instance === other.name)).toBe(true);
  expect(await other.count()).toBe(0);
}, 40_000);

it('a shutdown timeout shorter than the handler hands the unfinished action back, and another instance runs it', async () => {
  const current = suite.fleet('handback', TOPIC);
  // This one does not exit after app.close(): its process must end by itself once the abandoned handler returns.
  const leaving = await current.spawn('c1', { consume: true, shutdownTimeout: '500ms', exitAfterClose: false });
  await leaving.call({ op: 'schedule', key: 'long', delay: 100, payload: { armId: 'long', holdMs: HOLD_MS } });
  await current.until(() => current.startsOf('long').length === 1, 10_000, 'the run of "long" on c1');
  // Started only now, so it cannot have taken "long" first; its runs do not hold.
  const staying = await current.spawn('c2', { consume: true, ignoreHolds: true });

  const closing = leaving.close(10_000, HOLD_MS + 5_000);
  await current.until(() => current.endsOf('long').length === 1, HOLD_MS + 10_000, 'the handed-back run of "long"');
  const reply = await closing;
  await sleep(600);

  const closeTook = reply.returnedAt - reply.issuedAt;
  const starts = current.startsOf('long').map((start) => ({ instance: start.instance, attempt: start.attempt }));
  const handedBackAfter = current.startsOf('long')[1].at - reply.returnedAt;
  const exitedAfterHandler = (leaving.exitedAt ?? Infinity) - (current.startsOf('long')[0].at + HOLD_MS);
  report(
    `hand-back: c1 closed ${closeTook} ms after close() (shutdown timeout 500 ms, handler ${HOLD_MS} ms); c2 ran "long" ${handedBackAfter} ms after that; ` +
      `starts ${JSON.stringify(starts)}; c1's process ended ${exitedAfterHandler} ms after its abandoned handler returned`,
  );
  expect(starts).toEqual([
    { instance: 'c1', attempt: 1 },
    { instance: 'c2', attempt: 1 },
  ]);
  // c2's run, then c1's abandoned one, which still returns in c1's closed application.
  expect(current.endsOf('long').map((end) => end.instance)).toEqual(['c2', 'c1']);
  expect(closeTook).toBeGreaterThanOrEqual(500);
  expect(closeTook).toBeLessThan(3_000);
  // Handed back at once (due now, with a wake-up), not after a lease.
  expect(handedBackAfter).toBeLessThan(3_000);
  expect(await staying.count()).toBe(0);
  // The abandoned run's outcome cannot be recorded on a closed connection: nothing retries it, the process just ends.
  expect(exitedAfterHandler).toBeLessThan(4_500);
}, 90_000);
