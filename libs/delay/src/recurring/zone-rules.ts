/**
 * The offset rules of one IANA time zone, read from the runtime's Intl data.
 *
 * Wall-clock times are handled as "wall milliseconds": the local date and time written as if it were
 * UTC (`Date.UTC(year, month - 1, day, hour, minute, second)`), so calendar arithmetic on them has no
 * DST in it. An instant's wall time is `instant + offsetAt(instant)`.
 */

export const DAY_MS = 86_400_000;

/** The instants at which a wall time happens in a zone. */
export type WallResolution =
  /** The wall time happens once. */
  | { readonly kind: 'single'; readonly instant: number }
  /** The clock went back over it: it happens twice, `earlier` < `later`. */
  | { readonly kind: 'overlap'; readonly earlier: number; readonly later: number }
  /** The clock jumped over it: it never happens; `transition` is the first instant after the jump. */
  | { readonly kind: 'gap'; readonly transition: number };

// 'longOffset' renders the offset alone ("GMT+05:30", "GMT-00:44:30", or "GMT" for zero), which is
// cheaper to read back than the formatted fields.
const OFFSET_TEXT = /GMT(?:([+-])(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?)?$/;

/** How many offset changes a ZoneRules remembers (a schedule near a change asks about it on every call). */
const REMEMBERED_TRANSITIONS = 16;
/** How many UTC days a ZoneRules remembers the offsets of (see offsetAt). */
const REMEMBERED_DAYS = 64;

/** The offsets of one UTC day: `before` until `change` (exclusive), `after` from it; change is null when the day has one offset. */
interface DayOffsets {
  readonly before: number;
  readonly change: number | null;
  readonly after: number;
}

interface Transition {
  readonly at: number;
  readonly offsetBefore: number;
}

export class ZoneRules {
  private readonly offsetFormat: Intl.DateTimeFormat;
  private readonly transitions: Transition[] = [];
  private fieldFormat: Intl.DateTimeFormat | null = null;
  private readonly days = new Map<number, DayOffsets>();
  private lookups = 0;

  /** Throws RangeError when the runtime does not know `timeZone`. */
  constructor(readonly timeZone: string) {
    this.offsetFormat = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'longOffset' });
  }

  /** Intl look-ups made so far (offsetAt's misses and their bisection steps): the work the tests count. */
  get lookupCount(): number {
    return this.lookups;
  }

  /**
   * The zone's UTC offset in milliseconds (whole seconds) at an instant. The offsets of a UTC day are
   * read once (at its two ends, and the change between them by bisection: at most one change within
   * two days, as resolve assumes) and remembered, so walking the instants of a frequent schedule costs
   * no Intl look-up per instant.
   */
  offsetAt(instantMs: number): number {
    const day = Math.floor(instantMs / DAY_MS);
    let offsets = this.days.get(day);
    if (offsets === undefined) {
      offsets = this.dayOffsets(day);
      if (this.days.size >= REMEMBERED_DAYS) this.days.delete(this.days.keys().next().value as number);
      this.days.set(day, offsets);
    }
    return offsets.change === null || instantMs < offsets.change ? offsets.before : offsets.after;
  }

  private dayOffsets(day: number): DayOffsets {
    const start = day * DAY_MS;
    const before = this.lookupOffset(start);
    const after = this.lookupOffset(start + DAY_MS - 1);
    if (before === after) return { before, change: null, after };
    let low = Math.floor(start / 1000); // offset at low (in seconds) is `before`
    let high = Math.floor((start + DAY_MS - 1) / 1000); // offset at high is not
    while (high - low > 1) {
      const middle = Math.floor((low + high) / 2);
      if (this.lookupOffset(middle * 1000) === before) low = middle;
      else high = middle;
    }
    return { before, change: high * 1000, after };
  }

  /** The offset at an instant, from Intl. */
  private lookupOffset(instantMs: number): number {
    this.lookups++;
    const match = OFFSET_TEXT.exec(this.offsetFormat.format(instantMs));
    if (match === null) return this.offsetFromFields(instantMs);
    if (match[1] === undefined) return 0;
    const seconds = Number(match[2]) * 3600 + Number(match[3] ?? 0) * 60 + Number(match[4] ?? 0);
    return (match[1] === '-' ? -seconds : seconds) * 1000;
  }

  /** The wall milliseconds of an instant. */
  wallAt(instantMs: number): number {
    return instantMs + this.offsetAt(instantMs);
  }

  /**
   * The instants at which `wallMs` happens. Looks for the zone's offsets a day either side, so it
   * assumes at most one offset change within two days of the wall time (true of all tz data since
   * clocks were standardised, and of every DST rule).
   */
  resolve(wallMs: number): WallResolution {
    const before = this.offsetAt(wallMs - DAY_MS);
    const after = this.offsetAt(wallMs + DAY_MS);
    const instants: number[] = [];
    for (const offset of before === after ? [before] : [before, after]) {
      const instant = wallMs - offset;
      if (this.offsetAt(instant) === offset) instants.push(instant);
    }
    if (instants.length === 1) return { kind: 'single', instant: instants[0] };
    if (instants.length === 2) {
      return { kind: 'overlap', earlier: Math.min(instants[0], instants[1]), later: Math.max(instants[0], instants[1]) };
    }
    // No offset makes the wall time: the clock jumped over it. The jump is between the instant the wall
    // time would be under the larger offset and the one under the smaller.
    const middle = this.offsetAt(wallMs - before);
    const low = wallMs - Math.max(before, after, middle);
    const high = wallMs - Math.min(before, after, middle);
    return { kind: 'gap', transition: this.transitionBetween(low, high) };
  }

  /**
   * The first instant (whole second) in (lowMs, highMs] whose offset differs from the offset at lowMs;
   * highMs when there is none. Binary search: assumes one change in the range.
   */
  transitionBetween(lowMs: number, highMs: number): number {
    const offset = this.offsetAt(lowMs);
    for (const known of this.transitions) {
      if (known.at > lowMs && known.at <= highMs && known.offsetBefore === offset) return known.at;
    }
    let low = Math.floor(lowMs / 1000); // offset at low (in seconds) is `offset`
    let high = Math.ceil(highMs / 1000);
    if (this.offsetAt(high * 1000) === offset) return highMs;
    while (high - low > 1) {
      const middle = Math.floor((low + high) / 2);
      if (this.offsetAt(middle * 1000) === offset) low = middle;
      else high = middle;
    }
    if (this.transitions.length === REMEMBERED_TRANSITIONS) this.transitions.shift();
    this.transitions.push({ at: high * 1000, offsetBefore: offset });
    return high * 1000;
  }

  /**
   * The offset from the local fields, for a runtime that renders 'longOffset' some other way (Node 20
   * and later do not). Slower; instants from the year 100 on (see instant-range.ts).
   */
  offsetFromFields(instantMs: number): number {
    this.fieldFormat ??= new Intl.DateTimeFormat('en-US', {
      timeZone: this.timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    const fields: Record<string, number> = {};
    for (const part of this.fieldFormat.formatToParts(instantMs)) fields[part.type] = Number(part.value);
    const wall = new Date(0);
    wall.setUTCFullYear(fields.year, fields.month - 1, fields.day);
    wall.setUTCHours(fields.hour % 24, fields.minute, fields.second, 0);
    return wall.getTime() - Math.floor(instantMs / 1000) * 1000;
  }
}
