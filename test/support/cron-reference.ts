// A brute-force reference for cron schedules in a time zone, written for the differential test of
// libs/delay/src/recurring: it walks real instants one step at a time, reads their local fields with
// Intl, matches the cron fields itself (its own parser, no croner) and applies the DST policies from
// their definitions. Slow on purpose; only for short ranges.
import { fieldsOfWall, localFields, wallOf, type LocalFields } from './zone-fields';

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const WEEKDAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const NICKNAMES: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@hourly': '0 * * * *',
};

type DayTest = (year: number, month: number, day: number, weekday: number) => boolean;

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

function weekdayOf(year: number, month: number, day: number): number {
  return new Date(Date.UTC(year, month - 1, day)).getUTCDay();
}

function nameToNumber(text: string, names: readonly string[], base: number): string {
  const index = names.indexOf(text.toUpperCase());
  return index === -1 ? text : String(index + base);
}

/** The values of a plain field (numbers, ranges, steps, lists, names) as a set. */
function valueSet(field: string, min: number, max: number, names: readonly string[] = [], nameBase = 0): Set<number> {
  const values = new Set<number>();
  for (const item of field.split(',')) {
    const [rangeText, stepText] = item.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    let from: number;
    let to: number;
    if (rangeText === '*' || rangeText === '?') {
      from = min;
      to = max;
    } else if (rangeText.includes('-')) {
      const [a, b] = rangeText.split('-');
      from = Number(nameToNumber(a, names, nameBase));
      to = Number(nameToNumber(b, names, nameBase));
    } else {
      from = Number(nameToNumber(rangeText, names, nameBase));
      to = stepText === undefined ? from : max;
    }
    for (let value = from; value <= to; value += step) values.add(value);
  }
  return values;
}

function dayOfMonthTest(field: string): DayTest {
  const tests: DayTest[] = field.split(',').map((item): DayTest => {
    const upper = item.toUpperCase();
    if (upper === 'L') return (y, m, d) => d === daysInMonth(y, m);
    if (upper === 'LW') {
      return (y, m, d) => {
        const last = daysInMonth(y, m);
        const weekday = weekdayOf(y, m, last);
        return d === (weekday === 0 ? last - 2 : weekday === 6 ? last - 1 : last);
      };
    }
    if (upper.endsWith('W')) {
      const target = Number(upper.slice(0, -1));
      return (y, m, d) => {
        const last = daysInMonth(y, m);
        if (target > last) return false;
        const weekday = weekdayOf(y, m, target);
        const nearest = weekday === 6 ? (target === 1 ? 3 : target - 1) : weekday === 0 ? (target === last ? target - 2 : target + 1) : target;
        return d === nearest;
      };
    }
    const set = valueSet(item, 1, 31);
    return (_y, _m, d) => set.has(d);
  });
  return (y, m, d, w) => tests.some((test) => test(y, m, d, w));
}

function dayOfWeekTest(field: string): DayTest {
  const tests: DayTest[] = field.split(',').map((item): DayTest => {
    const upper = item.toUpperCase();
    const nth = /^(\w+)#(\d)$/.exec(upper);
    if (nth) {
      const weekday = Number(nameToNumber(nth[1], WEEKDAYS, 0)) % 7;
      const n = Number(nth[2]);
      return (_y, _m, d, w) => w === weekday && Math.ceil(d / 7) === n;
    }
    const last = /^(\w+?)L$/.exec(upper);
    if (last) {
      const weekday = Number(nameToNumber(last[1], WEEKDAYS, 0)) % 7;
      return (y, m, d, w) => w === weekday && d + 7 > daysInMonth(y, m);
    }
    const set = new Set([...valueSet(item, 0, 7, WEEKDAYS)].map((value) => value % 7));
    return (_y, _m, _d, w) => set.has(w);
  });
  return (y, m, d, w) => tests.some((test) => test(y, m, d, w));
}

export class ReferenceCron {
  readonly fixedTime: boolean;
  private readonly seconds: Set<number>;
  private readonly minutes: Set<number>;
  private readonly hours: Set<number>;
  private readonly months: Set<number>;
  private readonly dayMatches: DayTest;

  constructor(expression: string) {
    const expanded = NICKNAMES[expression.trim().toLowerCase()] ?? expression;
    const fields = expanded.trim().split(/\s+/);
    if (fields.length === 5) fields.unshift('0');
    if (fields.length !== 6) throw new Error(`reference: ${expression} has ${fields.length} fields`);
    const [second, minute, hour, dayOfMonth, month, dayOfWeekField] = fields;
    this.fixedTime = [second, minute, hour].every((field) => /^[0-9,-]+$/.test(field));
    this.seconds = valueSet(second, 0, 59);
    this.minutes = valueSet(minute, 0, 59);
    this.hours = valueSet(hour, 0, 23);
    this.months = valueSet(month, 1, 12, MONTHS, 1);
    const both = dayOfWeekField.startsWith('+');
    const dayOfWeek = both ? dayOfWeekField.slice(1) : dayOfWeekField;
    const domStar = dayOfMonth === '*' || dayOfMonth === '?';
    const dowStar = dayOfWeek === '*' || dayOfWeek === '?';
    const domTest = dayOfMonthTest(dayOfMonth);
    const dowTest = dayOfWeekTest(dayOfWeek);
    if (dowStar) this.dayMatches = domTest;
    else if (domStar) this.dayMatches = dowTest;
    else if (both) this.dayMatches = (y, m, d, w) => domTest(y, m, d, w) && dowTest(y, m, d, w);
    else this.dayMatches = (y, m, d, w) => domTest(y, m, d, w) || dowTest(y, m, d, w);
  }

  matches(fields: LocalFields): boolean {
    return (
      this.seconds.has(fields.second) &&
      this.minutes.has(fields.minute) &&
      this.hours.has(fields.hour) &&
      this.months.has(fields.month) &&
      this.dayMatches(fields.year, fields.month, fields.day, fields.weekday)
    );
  }
}

export interface ReferencePolicies {
  dstGap: 'shift' | 'skip';
  dstOverlap: 'first' | 'last';
}

/**
 * Every firing instant in (fromMs, toMs], walking real instants every stepMs (60 000 for 5-field
 * expressions, 1 000 with seconds) from `marginMs` before to `marginMs` after, so that a wall time's
 * other occurrence in an overlap is seen. Assumes offsets are whole multiples of stepMs.
 */
export function referenceFirings(
  cron: ReferenceCron,
  timeZone: string,
  fromMs: number,
  toMs: number,
  stepMs: number,
  policies: ReferencePolicies,
  marginMs = 3 * 3_600_000,
): number[] {
  const start = Math.floor((fromMs - marginMs) / stepMs) * stepMs;
  const end = toMs + marginMs;
  const samples: { instant: number; wall: number; matches: boolean }[] = [];
  for (let instant = start; instant <= end; instant += stepMs) {
    const fields = localFields(timeZone, instant);
    samples.push({ instant, wall: wallOf(fields), matches: cron.matches(fields) });
  }

  const firings = new Set<number>();
  if (!cron.fixedTime) {
    for (const sample of samples) if (sample.matches) firings.add(sample.instant);
  } else {
    // Each matching wall time: its first or its last instant.
    const instantsOfWall = new Map<number, number[]>();
    for (const sample of samples) {
      if (!sample.matches) continue;
      const list = instantsOfWall.get(sample.wall) ?? [];
      list.push(sample.instant);
      instantsOfWall.set(sample.wall, list);
    }
    for (const list of instantsOfWall.values()) firings.add(policies.dstOverlap === 'first' ? list[0] : list[list.length - 1]);
    // Matching wall times the clock jumped over: the first instant after the jump, if on the same date.
    if (policies.dstGap === 'shift') {
      for (let i = 1; i < samples.length; i++) {
        const before = samples[i - 1];
        const after = samples[i];
        for (let wall = before.wall + stepMs; wall < after.wall; wall += stepMs) {
          const sameDate = Math.floor(wall / 86_400_000) === Math.floor(after.wall / 86_400_000);
          if (sameDate && cron.matches(fieldsOfWall(wall))) {
            firings.add(after.instant);
            break;
          }
        }
      }
    }
  }
  return [...firings].filter((instant) => instant > fromMs && instant <= toMs).sort((a, b) => a - b);
}
