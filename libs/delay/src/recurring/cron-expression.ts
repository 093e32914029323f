import { Cron, CronPattern } from 'croner';
import { InvalidCronExpressionError } from '../errors/invalid-cron-expression.error';

/** Longer than any sensible expression; refuses pasted garbage before the parser sees it. */
const MAX_EXPRESSION_LENGTH = 256;

const CRONER_OPTIONS = { mode: '5-or-6-parts' } as const;

/** A time field made only of numbers, lists and ranges: no wildcard, no step. */
const FIXED_FIELD = /^[0-9,-]+$/;

const SECOND_MS = 1000;
const DAY_SECONDS = 86_400;
/** How many days' matching a CronExpression remembers (walking a frequent schedule asks about the same day again and again). */
const REMEMBERED_DAYS = 8;
/** The first and last day (since 1970) searched backward: the instant range of instant-range.ts, with a day's margin. */
const FIRST_DAY = Math.floor(Date.UTC(100, 0, 1) / 86_400_000);
/** croner finds no date from the year 3000 on (for an expression without a year field): the last wall time it can match. */
const LAST_WALL_MS = Date.UTC(3000, 0, 1) - SECOND_MS;

/**
 * A validated cron expression, matched on wall milliseconds (see zone-rules.ts). The calendar matching
 * (fields, names, L, W, #, the day-of-month / day-of-week rule) is croner's, run at UTC offset 0 so that
 * no time zone or DST logic of croner's takes part: the zone is applied by CronOccurrence.
 */
export class CronExpression {
  private readonly matcher: Cron;
  private readonly pattern: CronPattern;
  /** Seconds, minutes and hours hold only numbers (single values, lists, ranges): see DstGapPolicy. */
  readonly fixedTime: boolean;
  /** Day (since 1970, on the wall clock) -> whether the date matches the day, month and weekday fields. */
  private readonly dayMatches = new Map<number, boolean>();
  private steps = 0;

  private constructor(readonly expression: string) {
    this.pattern = new CronPattern(expression, undefined, CRONER_OPTIONS);
    this.matcher = new Cron(expression, { ...CRONER_OPTIONS, paused: true, utcOffset: 0 });
    // croner has replaced a nickname (@daily) by its fields; a 5-field expression has no seconds field.
    const fields = this.pattern.pattern.trim().split(/\s+/);
    const timeFields = fields.length === 5 ? ['0', fields[0], fields[1]] : fields.slice(0, 3);
    this.fixedTime = timeFields.every((field) => FIXED_FIELD.test(field));
  }

  /** croner steps asked for so far (nextWall's and the day look-ups): the work the tests count. */
  get stepCount(): number {
    return this.steps;
  }

  /** Parses and validates; throws InvalidCronExpressionError. */
  static parse(expression: unknown): CronExpression {
    if (typeof expression !== 'string') {
      throw new InvalidCronExpressionError(expression, 'expected a string such as "30 2 * * *"');
    }
    const text = expression.trim();
    if (text === '') throw new InvalidCronExpressionError(expression, 'empty');
    if (text.length > MAX_EXPRESSION_LENGTH) {
      throw new InvalidCronExpressionError(expression, `longer than ${MAX_EXPRESSION_LENGTH} characters`);
    }
    let parsed: CronExpression;
    try {
      parsed = new CronExpression(text);
    } catch (error) {
      const detail = error instanceof Error ? error.message.replace(/^Cron\w*: /, '') : String(error);
      throw new InvalidCronExpressionError(
        expression,
        `${detail} (expected 5 fields "minute hour day-of-month month day-of-week", or 6 with seconds first)`,
        error,
      );
    }
    if (parsed.nextWall(Date.UTC(1970, 0, 1)) === null) {
      throw new InvalidCronExpressionError(expression, 'matches no date at all (such as 30 February)');
    }
    return parsed;
  }

  /** The first matching wall time strictly after `wallMs` (whole seconds), or null when there is none up to the year 9999. */
  nextWall(wallMs: number): number | null {
    // Within a matching date the time of day is read off the time fields; croner finds the next date.
    const second = Math.floor(wallMs / SECOND_MS) + 1;
    const day = Math.floor(second / DAY_SECONDS);
    if (this.matchesDay(day)) {
      const time = this.timeOfDay(second - day * DAY_SECONDS, 1);
      if (time !== null) return (day * DAY_SECONDS + time) * SECOND_MS;
    }
    return this.croner(wallMs);
  }

  /**
   * The last matching wall time at or before `wallMs` (whole seconds), or null when there is none from
   * the year 100 on; as nextWall finds none from the year 3000 on, a later `wallMs` counts as the end of 2999. The time of day comes from the time fields; the date from croner, asked forward
   * over windows that double backward until one holds a matching date, then walked through that
   * window's matching dates: a few steps for any schedule that fires at least every few years.
   */
  prevWall(wallMs: number): number | null {
    const second = Math.floor(Math.min(wallMs, LAST_WALL_MS) / SECOND_MS);
    const day = Math.floor(second / DAY_SECONDS);
    if (this.matchesDay(day)) {
      const time = this.timeOfDay(second - day * DAY_SECONDS, -1);
      if (time !== null) return (day * DAY_SECONDS + time) * SECOND_MS;
    }
    const date = this.lastMatchingDay(day - 1);
    if (date === null) return null;
    return (date * DAY_SECONDS + (this.timeOfDay(DAY_SECONDS - 1, -1) as number)) * SECOND_MS;
  }

  private croner(wallMs: number): number | null {
    this.steps++;
    const next = this.matcher.nextRun(new Date(wallMs));
    return next === null ? null : next.getTime();
  }

  /** The first matching date from `day` on (null: none up to the year 9999). */
  private firstMatchingDay(day: number): number | null {
    const wall = this.croner(day * DAY_SECONDS * SECOND_MS - SECOND_MS);
    return wall === null ? null : Math.floor(wall / (DAY_SECONDS * SECOND_MS));
  }

  /** The last matching date at or before `day`. */
  private lastMatchingDay(day: number): number | null {
    for (let span = 1; ; span *= 2) {
      const low = Math.max(day - span + 1, FIRST_DAY);
      const first = this.firstMatchingDay(low);
      if (first !== null && first <= day) {
        let found = first;
        for (let next = this.firstMatchingDay(found + 1); next !== null && next <= day; next = this.firstMatchingDay(found + 1)) found = next;
        return found;
      }
      if (low === FIRST_DAY) return null;
    }
  }

  private matchesDay(day: number): boolean {
    let matches = this.dayMatches.get(day);
    if (matches === undefined) {
      matches = this.firstMatchingDay(day) === day;
      if (this.dayMatches.size >= REMEMBERED_DAYS) this.dayMatches.delete(this.dayMatches.keys().next().value as number);
      this.dayMatches.set(day, matches);
    }
    return matches;
  }

  /**
   * The first matching time of day (seconds since midnight) at or after `from` (direction 1), or the
   * last at or before it (direction -1); null when there is none that side within the day.
   */
  private timeOfDay(from: number, direction: 1 | -1): number | null {
    const { hour, minute, second } = this.pattern;
    let h = Math.floor(from / 3600);
    let m = Math.floor((from % 3600) / 60);
    let s = from % 60;
    const edgeM = direction === 1 ? 0 : 59;
    for (; h >= 0 && h < 24; h += direction, m = edgeM, s = edgeM) {
      if (!hour[h]) continue;
      for (; m >= 0 && m < 60; m += direction, s = edgeM) {
        if (!minute[m]) continue;
        for (; s >= 0 && s < 60; s += direction) if (second[s]) return h * 3600 + m * 60 + s;
      }
    }
    return null;
  }

  /**
   * The smallest spacing, in wall-clock milliseconds, between two consecutive matching times of day
   * (at least one second, at most a day). A lower bound on the spacing of occurrences on the wall
   * clock; around a DST change two occurrences can be closer in real time.
   */
  minWallSpacingMs(): number {
    const times: number[] = [];
    this.pattern.hour.forEach((hourOn, hour) => {
      if (!hourOn) return;
      this.pattern.minute.forEach((minuteOn, minute) => {
        if (!minuteOn) return;
        this.pattern.second.forEach((secondOn, second) => {
          if (secondOn) times.push(hour * 3600 + minute * 60 + second);
        });
      });
    });
    let spacing = 86_400 - times[times.length - 1] + times[0];
    for (let i = 1; i < times.length; i++) spacing = Math.min(spacing, times[i] - times[i - 1]);
    return spacing * 1000;
  }
}
