import { InvalidDurationError } from '../errors/invalid-duration.error';

/**
 * A span of time: milliseconds as a number, or a string of one or more
 * `<number><unit>` parts such as `'30s'`, `'48h'`, `'1h30m'`, `'1.5d'`.
 * Units: ms, s, m, h, d, w, y (365 days). A string needs a unit on every
 * part: `'30'` is refused rather than guessed (seconds read from an
 * environment variable would otherwise silently become milliseconds).
 */
export type Duration = number | string;

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
  y: 31_536_000_000,
};

const PART = /(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w|y)/y;

/** Parses a duration to whole milliseconds (rounded up, so "due" is never early). */
export function parseDuration(value: unknown): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new InvalidDurationError(value, 'not a finite number');
    if (value < 0) throw new InvalidDurationError(value, 'negative');
    return Math.ceil(value);
  }
  if (typeof value !== 'string') {
    throw new InvalidDurationError(value, 'expected milliseconds or a string like "30s", "30m", "48h", "7d"');
  }
  const text = value.trim();
  if (text === '') throw new InvalidDurationError(value, 'empty');
  if (text.startsWith('-')) throw new InvalidDurationError(value, 'negative');
  if (/^\d+(\.\d+)?$/.test(text)) {
    throw new InvalidDurationError(value, `a number without a unit: write "${text}ms" or "${text}s" (or pass the number ${text} for milliseconds)`);
  }

  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < text.length) {
    const match = PART.exec(text);
    if (!match) {
      throw new InvalidDurationError(value, 'expected parts like "30s", "30m", "48h", "7d" or "1h30m" (units ms, s, m, h, d, w, y)');
    }
    total += Number(match[1]) * UNIT_MS[match[2]];
    while (text[PART.lastIndex] === ' ') PART.lastIndex++;
  }
  if (!Number.isFinite(total)) throw new InvalidDurationError(value, 'too large');
  return Math.ceil(total);
}
