import { parseDuration } from '../time/duration';
import type { Duration } from '../time/duration';

/** The default lease of runs on recurring topics: what a stopped instance's occurrence can hold its schedule back for. */
export const DEFAULT_RECURRING_LEASE: Duration = '5s';

/**
 * The leases an instance gives its runs and when it renews them: `lease`
 * for a topic's runs, renewed every third of it, and the shorter recurring
 * lease for runs of recurring topics, renewed every fifth of it (a live
 * instance's renewal must be very late, four fifths of it, before its
 * occurrence is taken back). One timer serves both: it ticks as often as the
 * shorter needs, and a topic is renewed when its own time has come.
 */
export class LeaseRenewals {
  readonly recurringLeaseMs: number;
  private readonly renewed = new WeakMap<object, number>();
  /** Consumers whose renewal is still going on (each is bounded by commandTimeout). */
  private readonly inFlight = new WeakSet<object>();

  constructor(
    readonly leaseMs: number,
    recurringLease: Duration | undefined,
  ) {
    this.recurringLeaseMs = Math.min(leaseMs, parseDuration(recurringLease ?? DEFAULT_RECURRING_LEASE));
  }

  leaseFor(recurring: boolean): number {
    return recurring ? this.recurringLeaseMs : this.leaseMs;
  }

  /** How often the renewal timer ticks: for the shorter lease when any topic has it. */
  timerMs(anyRecurring: boolean): number {
    if (!anyRecurring) return Math.max(500, Math.floor(this.leaseMs / 3));
    return Math.max(250, Math.floor(Math.min(this.leaseMs / 3, this.recurringLeaseMs / 5)));
  }

  /**
   * Whether a consumer (of a recurring topic or not) is due for a renewal at this tick (half a tick early rather than a
   * tick late). Never while its previous renewal is still going on; the other consumers' renewals are not held back by
   * it (a shard or connection that does not answer for a whole commandTimeout would otherwise let every short
   * recurring lease expire).
   */
  due(consumer: object, recurring: boolean, timerMs: number, now: number): boolean {
    if (this.inFlight.has(consumer)) return false;
    const every = recurring ? this.recurringLeaseMs / 5 : this.leaseMs / 3;
    const last = this.renewed.get(consumer);
    if (last !== undefined && now - last < every - timerMs / 2) return false;
    this.renewed.set(consumer, now);
    return true;
  }

  /** Runs one consumer's renewal, marked as going on until it settles. */
  track(consumer: object, renewal: () => Promise<void>): Promise<void> {
    this.inFlight.add(consumer);
    return renewal().finally(() => this.inFlight.delete(consumer));
  }
}
