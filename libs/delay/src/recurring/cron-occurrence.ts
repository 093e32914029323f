import type { CronExpression } from './cron-expression';
import type { NextOccurrence } from './next-occurrence';
import type { DstGapPolicy, DstOverlapPolicy } from './recurrence-spec';
import { DAY_MS, type WallResolution, type ZoneRules } from './zone-rules';
import { clampInstant, MAX_INSTANT_MS, MIN_INSTANT_MS } from './instant-range';

/**
 * The occurrences of a cron expression in a time zone.
 *
 * The expression is matched on the wall clock (CronExpression.nextWall); each matching wall time is
 * turned into the instants it fires at:
 * - a wall time that happens once fires then;
 * - one the clock shows twice (fall back): a fixed-time schedule fires once, at the earlier instant
 *   ('first') or the later ('last'); any other schedule fires at both, as the clock shows it twice;
 * - one the clock skips (spring forward): a fixed-time schedule fires at the first instant after the
 *   jump if that is still the same local date ('shift'), or not at all ('skip'); any other schedule
 *   does not fire.
 * `after(t)` is the smallest of these instants above t, so results strictly increase and an instant
 * that several wall times map to (two times inside one gap) fires once.
 */
export class CronOccurrence implements NextOccurrence {
  constructor(
    private readonly expression: CronExpression,
    private readonly zone: ZoneRules,
    private readonly gapPolicy: DstGapPolicy,
    private readonly overlapPolicy: DstOverlapPolicy,
  ) {}

  after(instantMs: number): number | null {
    if (instantMs >= MAX_INSTANT_MS) return null;
    const after = clampInstant(instantMs);
    const zone = this.zone;

    // Wall times below `lowest` only happen at or before `after`. Usually that is the wall time of
    // `after`; when the clock is about to go back, times up to the size of the jump below it come again.
    const offsetNow = zone.offsetAt(after);
    let lowest = after + offsetNow;
    const offsetLater = zone.offsetAt(after + 2 * DAY_MS);
    if (offsetLater < offsetNow) {
      lowest = Math.min(lowest, zone.transitionBetween(after, after + 2 * DAY_MS) + offsetLater);
    }

    let best: number | null = null;
    // Once best is known, wall times from `stop` on can only fire after it.
    let stop = Number.POSITIVE_INFINITY;
    const wallNow = after + offsetNow;
    let wall = this.expression.nextWall(lowest - 1000);
    while (wall !== null && wall < stop) {
      const resolution = this.zone.resolve(wall);
      const firings = this.firings(wall, resolution);
      for (const instant of firings) {
        if (instant > instantMs && (best === null || instant < best)) {
          best = instant;
          stop = this.wallBound(best, after);
        }
      }
      let from = wall;
      // Below wallNow, a wall time fires after `after` only on its second pass, after the coming jump
      // back, and those instants rise with the wall time: once one is found, go on from wallNow.
      if (best !== null && wall < wallNow) from = Math.max(from, wallNow - 1000);
      if (resolution.kind === 'gap') from = Math.max(from, this.afterGap(wall, resolution.transition, firings.length > 0));
      // Matching wall times are whole seconds apart: skip asking for one that could not be below `stop`.
      wall = from + 1000 >= stop ? null : this.expression.nextWall(from);
    }
    return best;
  }

  /**
   * The last occurrence at or before `instantMs`, or null when there is none (from the year 100 on).
   * The mirror of `after`: walks the matching wall times downwards from the highest the clock has
   * shown up to the instant (its wall time, or more when the clock went back just before it), turns
   * each into its firing instants by the same rules, and stops once no lower wall time can give a
   * later instant. A skipped hour whose times do not fire is jumped over whole.
   */
  atOrBefore(instantMs: number): number | null {
    if (typeof instantMs !== 'number' || Number.isNaN(instantMs)) clampInstant(instantMs);
    if (instantMs < MIN_INSTANT_MS) return null;
    const at = Math.min(instantMs, MAX_INSTANT_MS);
    const zone = this.zone;
    const offsetNow = zone.offsetAt(at);
    const wallNow = at + offsetNow;
    let highest = wallNow;
    const offsetEarlier = zone.offsetAt(at - 2 * DAY_MS);
    if (offsetEarlier > offsetNow) {
      // The clock went back within two days: until it did, it showed wall times up to the jump higher.
      const transition = zone.transitionBetween(at - 2 * DAY_MS, at);
      highest = Math.max(highest, transition - 1 + offsetEarlier);
    }

    let best: number | null = null;
    // Once best is known, wall times below `stop` can only fire before it.
    let stop = Number.NEGATIVE_INFINITY;
    let wall = this.expression.prevWall(highest);
    while (wall !== null && wall >= stop) {
      const resolution = zone.resolve(wall);
      const firings = this.firings(wall, resolution);
      for (const instant of firings) {
        if (instant <= at && (best === null || instant > best)) {
          best = instant;
          stop = this.wallFloor(best, at);
        }
      }
      let from = wall - 1000;
      // Above wallNow, a wall time fires at or before `at` only on its first pass, before the clock went
      // back, and those instants rise with the wall time: once one is found, go on from wallNow.
      if (best !== null && wall > wallNow) from = Math.min(from, wallNow);
      // The skipped hour's other wall times fire at the same transition or not at all; when this one did
      // not fire (not fixed time, 'skip', or its date is not the transition's), the lower ones do not.
      if (resolution.kind === 'gap' && firings.length === 0) from = Math.min(from, zone.wallAt(resolution.transition - 1));
      wall = from < stop ? null : this.expression.prevWall(from);
    }
    return best !== null && best < MIN_INSTANT_MS ? null : best;
  }

  /**
   * A wall time below which every firing is earlier than `instant` (among those at or before `at`): the
   * wall time of the instant, or, when the clock went back between the instant and `at`, the wall time
   * it went back to if that is lower.
   */
  private wallFloor(instant: number, at: number): number {
    const wall = this.zone.wallAt(instant);
    // Only a change within the size of a jump (less than two days) after the instant can bring the
    // clock back below its wall time.
    const until = Math.min(at, instant + 2 * DAY_MS);
    if (this.zone.offsetAt(until) >= this.zone.offsetAt(instant)) return wall;
    const transition = this.zone.transitionBetween(instant, until);
    return Math.min(wall, transition + this.zone.offsetAt(transition));
  }

  /** The instants a matching wall time fires at, ascending. */
  private firings(wall: number, resolution: WallResolution): readonly number[] {
    switch (resolution.kind) {
      case 'single':
        return [resolution.instant];
      case 'overlap':
        if (!this.expression.fixedTime) return [resolution.earlier, resolution.later];
        return [this.overlapPolicy === 'first' ? resolution.earlier : resolution.later];
      case 'gap': {
        if (!this.expression.fixedTime || this.gapPolicy === 'skip') return [];
        const sameDate = Math.floor(this.zone.wallAt(resolution.transition) / DAY_MS) === Math.floor(wall / DAY_MS);
        return sameDate ? [resolution.transition] : [];
      }
    }
  }

  /**
   * Where to go on from a wall time in a gap: the other wall times of the gap fire at the same
   * transition or not at all, so from the end of the gap; but when this one did not shift because the
   * jump left its date, the gap's wall times on the transition's own date still do.
   */
  private afterGap(wall: number, transition: number, fired: boolean): number {
    const end = this.zone.wallAt(transition);
    if (fired || !this.expression.fixedTime || this.gapPolicy === 'skip') return end - 1000;
    return Math.max(wall, Math.floor(end / DAY_MS) * DAY_MS - 1000);
  }

  /**
   * A wall time from which every firing is later than `instant` (among those after `after`): the wall
   * time of the instant, or, when the clock went back between `after` and the instant, the wall time
   * the clock had reached before going back.
   */
  private wallBound(instant: number, after: number): number {
    const offset = this.zone.offsetAt(instant);
    const offsetBefore = this.zone.offsetAt(instant - 2 * DAY_MS);
    if (offsetBefore <= offset) return instant + offset;
    const transition = this.zone.transitionBetween(instant - 2 * DAY_MS, instant);
    if (transition <= after) return instant + offset;
    return Math.max(instant + offset, transition + offsetBefore);
  }
}
