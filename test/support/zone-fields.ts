// Local calendar fields of an instant in a time zone, read with Intl.DateTimeFormat#formatToParts, and
// a scan for a zone's offset changes. Written for tests, independently of libs/delay/src/recurring.

export interface LocalFields {
  year: number;
  month: number; // 1-12
  day: number;
  hour: number;
  minute: number;
  second: number;
  weekday: number; // 0 = Sunday
}

const formats = new Map<string, Intl.DateTimeFormat>();

function formatFor(timeZone: string): Intl.DateTimeFormat {
  let format = formats.get(timeZone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formats.set(timeZone, format);
  }
  return format;
}

export function localFields(timeZone: string, instantMs: number): LocalFields {
  const parts: Record<string, number> = {};
  for (const part of formatFor(timeZone).formatToParts(instantMs)) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  const fields = { year: parts.year, month: parts.month, day: parts.day, hour: parts.hour % 24, minute: parts.minute, second: parts.second };
  return { ...fields, weekday: new Date(Date.UTC(fields.year, fields.month - 1, fields.day)).getUTCDay() };
}

/** The local date and time written as if UTC ("wall milliseconds"). */
export function wallOf(fields: LocalFields): number {
  return Date.UTC(fields.year, fields.month - 1, fields.day, fields.hour, fields.minute, fields.second);
}

export function fieldsOfWall(wallMs: number): LocalFields {
  const date = new Date(wallMs);
  return {
    year: date.getUTCFullYear(),
    month: date.getUTCMonth() + 1,
    day: date.getUTCDate(),
    hour: date.getUTCHours(),
    minute: date.getUTCMinutes(),
    second: date.getUTCSeconds(),
    weekday: date.getUTCDay(),
  };
}

export function offsetOf(timeZone: string, instantMs: number): number {
  const whole = Math.floor(instantMs / 1000) * 1000;
  return wallOf(localFields(timeZone, whole)) - whole;
}

/** Instants (whole seconds) where the zone's offset changes in [fromMs, toMs), found by sampling every stepMs and bisecting. */
export function findTransitions(timeZone: string, fromMs: number, toMs: number, stepMs = 7 * 86_400_000): number[] {
  const found: number[] = [];
  let previous = fromMs;
  let previousOffset = offsetOf(timeZone, previous);
  for (let at = fromMs + stepMs; previous < toMs; at += stepMs) {
    const offset = offsetOf(timeZone, at);
    if (offset !== previousOffset) {
      let low = Math.floor(previous / 1000);
      let high = Math.floor(at / 1000);
      while (high - low > 1) {
        const middle = Math.floor((low + high) / 2);
        if (offsetOf(timeZone, middle * 1000) === previousOffset) low = middle;
        else high = middle;
      }
      if (high * 1000 < toMs) found.push(high * 1000);
    }
    previous = at;
    previousOffset = offset;
  }
  return found;
}
