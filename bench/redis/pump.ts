// Keeps a number of calls in flight: how the Redis benches drive "100
// schedule calls in flight".
import { performance } from 'node:perf_hooks';

/**
 * Runs `op(0)`, `op(1)`, ... keeping `inFlight` calls outstanding, until
 * `count` were started or `untilMs` (performance.now()) passed. Returns how
 * many completed and the elapsed seconds.
 */
export async function pump(inFlight: number, limit: { count?: number; untilMs?: number }, op: (n: number) => Promise<void>): Promise<{ done: number; seconds: number }> {
  const startedAt = performance.now();
  let started = 0;
  let done = 0;
  let active = 0;
  const more = (): boolean => (limit.count === undefined || started < limit.count) && (limit.untilMs === undefined || performance.now() < limit.untilMs);
  await new Promise<void>((resolve, reject) => {
    let failed = false;
    const launch = (): void => {
      while (!failed && active < inFlight && more()) {
        const n = started++;
        active++;
        op(n).then(
          () => {
            active--;
            done++;
            launch();
          },
          (error: unknown) => {
            failed = true;
            reject(error);
          },
        );
      }
      if (active === 0 && !failed) resolve();
    };
    launch();
  });
  return { done, seconds: (performance.now() - startedAt) / 1000 };
}
