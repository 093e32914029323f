import { Worker } from 'node:worker_threads';

/** The watcher: a 10 ms interval on a thread of its own, writing the worst delay it saw (ms) into the shared cell. */
const WATCHER = `
const { workerData } = require('node:worker_threads');
const worst = new Int32Array(workerData.shared);
let expected = performance.now() + workerData.everyMs;
setInterval(() => {
  const now = performance.now();
  const late = Math.round(now - expected);
  if (late > Atomics.load(worst, 0)) Atomics.store(worst, 0, late);
  expected = now + workerData.everyMs;
}, workerData.everyMs);
`;

/**
 * How late timers fire on this machine while something goes on: the worst
 * delay, past its time, of a 10 ms interval on a worker thread. A call
 * bounded by a timer of the library's settles at least that much later than
 * its bound when the machine is busy with other work, through no fault of
 * the library, so a test that asserts the bound adds it to its slack. The
 * interval runs on a thread of its own so that what it measures is the
 * machine's load: a stall of the test's own thread (the library blocking it)
 * is not counted, and still fails the bound. Call the function returned to
 * stop watching; it gives the worst delay seen, in ms.
 */
export function watchTimerLateness(everyMs = 10): () => number {
  const shared = new SharedArrayBuffer(4);
  const worst = new Int32Array(shared);
  const worker = new Worker(WATCHER, { eval: true, workerData: { shared, everyMs } });
  worker.unref();
  return () => {
    void worker.terminate();
    return Atomics.load(worst, 0);
  };
}
