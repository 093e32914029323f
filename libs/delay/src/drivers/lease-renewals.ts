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

  /** Whether a consumer (of a recurring topic or not) is due for a renewal at this tick (half a tick early rather than a tick late). */
  due(consumer: object, recurring: boolean, timerMs: number, now: number): boolean {
    const every = recurring ? this.recurringLeaseMs / 5 : this.leaseMs / 3;
    const last = this.renewed.get(consumer);
    if (last !== undefined && now - last < every - timerMs / 2) return false;
    this.renewed.set(consumer, now);
    return true;
  }
}
