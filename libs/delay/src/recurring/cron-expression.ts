import { Cron, CronPattern } from 'croner';
import { InvalidCronExpressionError } from '../errors/invalid-cron-expression.error';

/** Longer than any sensible expression; refuses pasted garbage before the parser sees it. */
const MAX_EXPRESSION_LENGTH = 256;

const CRONER_OPTIONS = { mode: '5-or-6-parts' } as const;

/** A time field made only of numbers, lists and ranges: no wildcard, no step. */
const FIXED_FIELD = /^[0-9,-]+$/;

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

  private constructor(readonly expression: string) {
    this.pattern = new CronPattern(expression, undefined, CRONER_OPTIONS);
    this.matcher = new Cron(expression, { ...CRONER_OPTIONS, paused: true, utcOffset: 0 });
    // croner has replaced a nickname (@daily) by its fields; a 5-field expression has no seconds field.
    const fields = this.pattern.pattern.trim().split(/\s+/);
    const timeFields = fields.length === 5 ? ['0', fields[0], fields[1]] : fields.slice(0, 3);
    this.fixedTime = timeFields.every((field) => FIXED_FIELD.test(field));
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
    const next = this.matcher.nextRun(new Date(wallMs));
    return next === null ? null : next.getTime();
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
