import { settleWithin } from '../utils/settle-within';

/**
 * Whether a topic consumer's claim is on its way to the store (the Redis and
 * PostgreSQL consumers keep one each): shutdown waits for it to settle, and
 * marks it abandoned once drain stops waiting for it, so that what it took,
 * if its reply still comes, is handed back rather than run by an instance
 * that can no longer record the outcomes.
 */
export class ClaimInFlight {
  private onItsWay = false;
  private gaveUp = false;
  private waiters: Array<() => void> = [];

  /** A claim is on its way now. */
  get active(): boolean {
    return this.onItsWay;
  }

  /** Drain stopped waiting for the claim on its way (shutdownTimeout): its reply, if it comes, is handed back. */
  get abandoned(): boolean {
    return this.gaveUp;
  }

  begin(): void {
    this.onItsWay = true;
  }

  /** The claim settled (answered or failed): whoever waits for it goes on. */
  end(): void {
    this.onItsWay = false;
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }

  abandon(): void {
    this.gaveUp = true;
  }

  /** Resolves once no claim is on its way (at once when none is). */
  settled(): Promise<void> {
    if (!this.onItsWay) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

/**
 * Waits for the claims on their way to settle, until `deadline` (local ms) at
 * the latest: at shutdown, before what lost claims took is handed back. A
 * claim sent before the drain settles within commandTimeout of each round
 * trip it makes (a PostgreSQL claim that first asks for lost claims makes
 * two, and sends no second once drain stopped waiting): as lost (no reply, or
 * one that came after drain stopped waiting), or by having taken nothing.
 */
export async function claimsSettled(claims: Iterable<ClaimInFlight>, deadline: number): Promise<void> {
  const onTheirWay = [...claims].filter((claim) => claim.active);
  if (onTheirWay.length === 0) return;
  await settleWithin(Promise.all(onTheirWay.map((claim) => claim.settled())), Math.max(0, deadline - Date.now()), () => new Error('a claim still on its way')).catch(() => undefined);
}
