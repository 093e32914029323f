/** How long the best sample is trusted before any newer one may replace it (the two clocks drift). */
const SAMPLE_LIFETIME_MS = 10_000;

/**
 * The database's clock minus this process's, estimated from the replies
 * that carry the database's time (`clock_ms()` read when a statement
 * started). The database read its clock somewhere between the moment a
 * statement was sent and the moment its reply arrived, so a sample bounds
 * the offset from below by `now - receivedAt` and from above by
 * `now - sentAt`. The estimate is the upper bound of the sample with the
 * shortest round trip seen lately: its error is at most that round trip,
 * and always towards the database's time being ahead, so a timer armed on
 * it fires early (a claim that finds nothing due re-arms) rather than late.
 * A reply delayed on its way back, or a statement that waited for a
 * connection or a lock, widens its own bounds and is passed over.
 */
export class PostgresClockOffset {
  private best: { offset: number; roundTrip: number; at: number } | undefined;

  /** The estimate, ms: add it to Date.now() for the database's time. */
  get value(): number {
    return this.best?.offset ?? 0;
  }

  /** A reply carrying `databaseNow`, for a statement sent at `sentAt` whose reply arrived at `receivedAt` (local ms). */
  observe(databaseNow: number, sentAt: number, receivedAt: number = Date.now()): void {
    if (!Number.isFinite(databaseNow)) return;
    const roundTrip = Math.max(0, receivedAt - sentAt);
    const best = this.best;
    if (best === undefined || roundTrip <= best.roundTrip || receivedAt - best.at > SAMPLE_LIFETIME_MS) {
      this.best = { offset: databaseNow - sentAt, roundTrip, at: receivedAt };
    }
  }
}
