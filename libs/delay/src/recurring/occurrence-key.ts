/**
 * Keys of a recurring series. The tick is filed under the series key itself;
 * each occurrence under the series key, U+001E and its identity: the
 * scheduled instant in ISO form, or `now ` and the instant for an extra run
 * asked by runRecurringNow. A series key may not hold U+001E, so the two never
 * collide, and an occurrence key names one instant of one series: the
 * series state only moves forward, so each identity is created once.
 */
export const SERIES_SEPARATOR = '\u001e';
const RUN_NOW_PREFIX = 'now ';

/** The longest series key: room for the separator, the prefix and an ISO instant within MAX_KEY_LENGTH (512). */
export const MAX_SERIES_KEY_LENGTH = 480;

export function occurrenceKey(seriesKey: string, scheduledAtMs: number, runNow = false): string {
  return `${seriesKey}${SERIES_SEPARATOR}${runNow ? RUN_NOW_PREFIX : ''}${isoInstant(scheduledAtMs)}`;
}

/** The last instant formatted: the schedules that tick together mostly share their instant, formatted once for them all. */
let lastInstant = NaN;
let lastIso = '';

function isoInstant(ms: number): string {
  if (ms !== lastInstant) {
    lastIso = new Date(ms).toISOString();
    lastInstant = ms;
  }
  return lastIso;
}

export interface ParsedOccurrenceKey {
  readonly seriesKey: string;
  readonly scheduledAtMs: number;
  readonly runNow: boolean;
}

/** The parts of an occurrence key; undefined for a tick (no separator) or a key this library did not make. */
export function parseOccurrenceKey(key: string): ParsedOccurrenceKey | undefined {
  const separator = key.indexOf(SERIES_SEPARATOR);
  if (separator < 0) return undefined;
  let identity = key.slice(separator + 1);
  const runNow = identity.startsWith(RUN_NOW_PREFIX);
  if (runNow) identity = identity.slice(RUN_NOW_PREFIX.length);
  const scheduledAtMs = parseInstant(identity);
  if (!Number.isFinite(scheduledAtMs)) return undefined;
  return { seriesKey: key.slice(0, separator), scheduledAtMs, runNow };
}

/** The last identity parsed: the occurrences run together mostly share their instant, parsed once for them all. */
let lastParsedIso = '';
let lastParsedMs = NaN;

function parseInstant(iso: string): number {
  if (iso !== lastParsedIso) {
    lastParsedMs = Date.parse(iso);
    lastParsedIso = iso;
  }
  return lastParsedMs;
}

export function isTickKey(key: string): boolean {
  return !key.includes(SERIES_SEPARATOR);
}
