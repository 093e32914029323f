import { Random } from '../../instances/support/random';
import { FaultLedger } from './fault-ledger';
import { FaultApp, within } from './fault-app';

export interface Workload {
  /** Schedules that resolved. */
  acknowledged: number;
  /** Schedule calls that rejected (each is retried, up to `tries`). */
  rejected: number;
  /** Calls that neither resolved nor rejected within the bound. */
  hung: number;
  /** The latest due time acknowledged, epoch ms. */
  lastDueAt: number;
  /** Cancels that resolved true (those actions must never run). */
  cancelled: number;
}

/**
 * Schedules `count` actions keyed `${prefix}${n}`, each due after a seeded
 * random delay in [minMs, maxMs], `parallel` calls at a time. A call that
 * rejects is retried (schedule replaces, so a retry is safe); every call
 * must settle within `boundMs`, or it counts as hung.
 */
export async function scheduleLoad(
  fa: FaultApp,
  ledger: FaultLedger,
  random: Random,
  spec: {
    topic: string;
    count: number;
    prefix: string;
    minMs: number;
    maxMs: number;
    parallel?: number;
    boundMs: number;
    tries?: number;
    /** A pause after a rejected call before its retry, ms. Default 0. */
    retryPauseMs?: number;
    /** The share of acknowledged schedules, still at least 500 ms from due, that are then cancelled. Default 0.1. */
    cancelShare?: number;
  },
): Promise<Workload> {
  const result: Workload = { acknowledged: 0, rejected: 0, hung: 0, lastDueAt: 0, cancelled: 0 };
  const delays = Array.from({ length: spec.count }, () => random.int(spec.minMs, spec.maxMs));
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < spec.count) {
      const n = next++;
      const key = `${spec.prefix}${n}`;
      for (let attempt = 1; attempt <= (spec.tries ?? 4); attempt++) {
        try {
          const pending = await within(fa.delay.schedule(spec.topic, key, { delay: delays[n], payload: { n } }), spec.boundMs, `schedule ${key}`);
          ledger.armed(spec.topic, key, pending.dueAt);
          result.acknowledged++;
          result.lastDueAt = Math.max(result.lastDueAt, pending.dueAt.getTime());
          // Far enough from due that no claim can come first: a run after this cancel said true is a bug.
          if (random.chance(spec.cancelShare ?? 0.1) && pending.dueAt.getTime() - Date.now() > 500) await cancelOnce(fa, ledger, spec.topic, key, spec.boundMs, result);
          break;
        } catch (error) {
          ledger.failedCall(spec.topic, key);
          if (error instanceof Error && error.message.includes('did not settle')) result.hung++;
          else result.rejected++;
          if (spec.retryPauseMs) await new Promise((resolve) => setTimeout(resolve, spec.retryPauseMs));
        }
      }
    }
  };
  await Promise.all(Array.from({ length: spec.parallel ?? 20 }, () => worker()));
  return result;
}

async function cancelOnce(fa: FaultApp, ledger: FaultLedger, topic: string, key: string, boundMs: number, result: Workload): Promise<void> {
  const issuedAt = Date.now();
  try {
    if (await within(fa.delay.cancel(topic, key), boundMs, `cancel ${key}`)) {
      ledger.cancelled(topic, key, issuedAt);
      result.cancelled++;
    }
  } catch (error) {
    // The cancel may or may not have been applied: the action may run, or not.
    ledger.forgive('its cancel failed, so it may have been applied', (t, k) => t === topic && k === key);
    if (error instanceof Error && error.message.includes('did not settle')) result.hung++;
    else result.rejected++;
  }
}

/** A matcher wrapper that says yes only on the chosen occurrences (0-based) of what `matches` accepts. */
export function onOccurrences<T extends readonly unknown[]>(matches: (...args: T) => boolean, occurrences: readonly number[]): (...args: T) => boolean {
  const chosen = new Set(occurrences);
  let seen = 0;
  return (...args: T) => matches(...args) && chosen.has(seen++);
}
