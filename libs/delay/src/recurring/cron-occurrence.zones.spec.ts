// Properties of daily fixed-time schedules in every IANA time zone this runtime knows, 2020-2030:
// results strictly increase and are never at or before the instant asked about, every local date has
// exactly one occurrence, and that occurrence is at the wall time asked for, or (when the clock skips
// it) at the first instant after the jump on the same date. Every offset change of every zone in the
// range is covered (a window of a day and a half either side), plus a few seeded random days per zone.
import { findTransitions, localFields, offsetOf, wallOf, type LocalFields } from '../../../../test/support/zone-fields';
import { seededRandom } from '../../../../test/support/seeded-random';
import { compileRecurrence } from './compile-recurrence';
import type { NextOccurrence } from './next-occurrence';

const DAY = 86_400_000;
const FROM = Date.UTC(2020, 0, 1);
const TO = Date.UTC(2031, 0, 1);
const ZONES = Intl.supportedValuesOf('timeZone');
const SCHEDULES = [
  { cron: '30 2 * * *', hour: 2, minute: 30 },
  { cron: '0 0 * * *', hour: 0, minute: 0 },
];

/** A local date as "yyyy-mm-dd". */
function dateOf(fields: LocalFields): string {
  return `${fields.year}-${String(fields.month).padStart(2, '0')}-${String(fields.day).padStart(2, '0')}`;
}

function localDate(timeZone: string, instant: number): string {
  return dateOf(localFields(timeZone, instant));
}

/** Problems with the occurrences of one schedule over [start, end] in one zone. */
function checkWindow(timeZone: string, schedule: (typeof SCHEDULES)[number], recurrence: NextOccurrence, start: number, end: number): string[] {
  const problems: string[] = [];
  const perDate = new Map<string, number>();
  let at = start;
  for (;;) {
    const next = recurrence.after(at);
    if (next === null) {
      problems.push(`${timeZone} ${schedule.cron}: after(${new Date(at).toISOString()}) is null`);
      break;
    }
    if (!(next > at)) problems.push(`${timeZone} ${schedule.cron}: after(${new Date(at).toISOString()}) = ${new Date(next).toISOString()}, not later`);
    if (next > end) break;
    const fields = localFields(timeZone, next);
    const date = dateOf(fields);
    perDate.set(date, (perDate.get(date) ?? 0) + 1);
    if (fields.hour !== schedule.hour || fields.minute !== schedule.minute || fields.second !== 0) {
      // Only allowed when the clock jumped over the time that day: `next` is the first instant after the
      // jump, the wall time just before it is earlier than the time asked for, and the date is the same.
      const before = localFields(timeZone, next - 1000);
      const asked = Date.UTC(fields.year, fields.month - 1, fields.day, schedule.hour, schedule.minute);
      const jumped = offsetOf(timeZone, next - 1000) < offsetOf(timeZone, next) && wallOf(before) < asked && wallOf(fields) > asked;
      if (!jumped) problems.push(`${timeZone} ${schedule.cron}: fired at ${new Date(next).toISOString()} (${date} ${fields.hour}:${fields.minute}:${fields.second} local)`);
    }
    at = next;
  }
  // Every date wholly inside the window has exactly one occurrence.
  const firstDay = Date.parse(localDate(timeZone, start));
  const lastDay = Date.parse(localDate(timeZone, end));
  for (let day = firstDay + DAY; day < lastDay; day += DAY) {
    const date = new Date(day).toISOString().slice(0, 10);
    const count = perDate.get(date) ?? 0;
    if (count !== 1) problems.push(`${timeZone} ${schedule.cron}: ${count} occurrences on ${date}`);
  }
  for (const [date, count] of perDate) {
    if (count > 1) problems.push(`${timeZone} ${schedule.cron}: ${count} occurrences on ${date}`);
  }
  return problems;
}

/**
 * Whether the zone's offset may change in the range: it differs between January and July of some year,
 * or between years. A zone that fails this has the same offset on all 22 samples; scanning it
 * (findTransitions, every 14 days: no zone changes twice within 14 days in this range) would find nothing.
 */
function mayChange(timeZone: string): boolean {
  const offsets = new Set<number>();
  for (let year = 2020; year <= 2030; year++) {
    offsets.add(offsetOf(timeZone, Date.UTC(year, 0, 1)));
    offsets.add(offsetOf(timeZone, Date.UTC(year, 6, 1)));
  }
  return offsets.size > 1;
}

describe('daily fixed-time schedules in every IANA time zone, 2020-2030', () => {
  it(`fire once per local date, strictly later each time, at the time asked for or just after a jump over it (${ZONES.length} zones)`, () => {
    const random = seededRandom(2020);
    const problems = new Set<string>();
    let windows = 0;
    let changes = 0;
    for (const timeZone of ZONES) {
      const transitions = mayChange(timeZone) ? findTransitions(timeZone, FROM, TO, 14 * DAY) : [];
      changes += transitions.length;
      const starts = transitions.map((transition) => transition - 1.5 * DAY);
      for (let i = 0; i < 3; i++) starts.push(FROM + Math.floor(random() * (TO - FROM - 3 * DAY)));
      for (const schedule of SCHEDULES) {
        const recurrence = compileRecurrence({ cron: schedule.cron, timeZone });
        for (const start of starts) {
          windows++;
          for (const problem of checkWindow(timeZone, schedule, recurrence, start, start + 3 * DAY)) problems.add(problem);
        }
      }
    }
    expect([...problems]).toEqual([]);
    expect(ZONES.length).toBeGreaterThan(300);
    expect(changes).toBeGreaterThan(1000); // the windows do reach offset changes: about 130 zones have DST
    expect(windows).toBeGreaterThan(ZONES.length * 3 * SCHEDULES.length);
  });
});
