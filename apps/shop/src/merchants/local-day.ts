import { UnknownTimeZoneError } from 'nestjs-delay';

const DAY_MS = 86_400_000;

/** One local day of a zone: its date and the instants it starts and ends at (end excluded). */
export interface LocalDay {
  /** YYYY-MM-DD */
  readonly date: string;
  readonly from: Date;
  readonly to: Date;
}

/**
 * The zone's canonical IANA name ("europe/paris" → "Europe/Paris"), or the
 * library's UnknownTimeZoneError: the same check the library makes of a
 * recurring schedule's zone, so the shop stores no zone its schedules refuse.
 */
export function canonicalTimeZone(timeZone: string): string {
  if (timeZone.trim() === '') throw new UnknownTimeZoneError(timeZone);
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone }).resolvedOptions().timeZone;
  } catch (error) {
    throw new UnknownTimeZoneError(timeZone, error);
  }
}

/** The local day before the one `instant` falls on in `timeZone`: what a digest sent at `instant` reports. */
export function previousLocalDay(instant: Date, timeZone: string): LocalDay {
  const { year, month, day } = wallTime(instant.getTime(), timeZone);
  const previous = new Date(Date.UTC(year, month - 1, day) - DAY_MS);
  return localDay(previous.toISOString().slice(0, 10), timeZone);
}

/**
 * The local day `date` (YYYY-MM-DD) in `timeZone`, as the instants of its
 * start and of the next day's start: 24 hours long most days, 23 or 25 on
 * the days the clocks change. Days computed this way tile time: each ends
 * where the next begins, so no order falls in two digests or in none.
 */
export function localDay(date: string, timeZone: string): LocalDay {
  const [year, month, day] = date.split('-').map(Number) as [number, number, number];
  const next = new Date(Date.UTC(year, month - 1, day) + DAY_MS).toISOString().slice(0, 10);
  return { date, from: new Date(startOfDay(date, timeZone)), to: new Date(startOfDay(next, timeZone)) };
}

/**
 * The first instant of local date `date`: local midnight, or where midnight
 * does not exist that day (a zone that springs forward at 00:00), the
 * instant the clocks jump, which is the first one shown on that date. When
 * midnight happens twice, the first of them.
 */
function startOfDay(date: string, timeZone: string): number {
  const [year, month, day] = date.split('-').map(Number) as [number, number, number];
  const wall = Date.UTC(year, month - 1, day);
  // A zone's offset a day either side of the date covers any change that day.
  const offsets = [...new Set([offsetAt(wall - DAY_MS, timeZone), offsetAt(wall + DAY_MS, timeZone), offsetAt(wall, timeZone)])];
  const exact = offsets.map((offset) => wall - offset).filter((instant) => wallMs(instant, timeZone) === wall);
  if (exact.length > 0) return Math.min(...exact);
  // Midnight skipped: the jump happens at midnight on the old offset.
  return wall - offsetAt(wall - DAY_MS, timeZone);
}

interface WallTime {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
}

const FORMATS = new Map<string, Intl.DateTimeFormat>();

function wallTime(instant: number, timeZone: string): WallTime {
  let format = FORMATS.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    FORMATS.set(timeZone, format);
  }
  const parts = Object.fromEntries(format.formatToParts(instant).map((part) => [part.type, part.value]));
  return { year: Number(parts.year), month: Number(parts.month), day: Number(parts.day), hour: Number(parts.hour), minute: Number(parts.minute), second: Number(parts.second) };
}

/** The wall time shown in the zone at `instant`, as if it were UTC, in ms (whole seconds). */
function wallMs(instant: number, timeZone: string): number {
  const { year, month, day, hour, minute, second } = wallTime(instant, timeZone);
  return Date.UTC(year, month - 1, day, hour, minute, second);
}

/** The zone's offset from UTC at `instant`, in ms (east positive). */
function offsetAt(instant: number, timeZone: string): number {
  const whole = Math.floor(instant / 1000) * 1000;
  return wallMs(whole, timeZone) - whole;
}
