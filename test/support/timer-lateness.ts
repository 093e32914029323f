/**
 * How late this process's timers fire while something goes on: the worst
 * delay, past its time, of a 10 ms interval. A call bounded by a timer of the
 * library's settles at least that much later than its bound on a machine
 * busy with other work, through no fault of the library, so a test that
 * asserts the bound adds it to its slack. Call the function returned to stop
 * watching; it gives the worst delay seen, in ms.
 */
export function watchTimerLateness(everyMs = 10): () => number {
  let worst = 0;
  let expected = performance.now() + everyMs;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - expected);
    expected = now + everyMs;
  }, everyMs);
  return () => {
    clearInterval(timer);
    // The interval may be due and not yet run: count that wait too.
    return Math.max(worst, performance.now() - expected);
  };
}
