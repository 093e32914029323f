import { InvalidRecurrenceError } from '../errors/invalid-recurrence.error';
import { UnknownTimeZoneError } from '../errors/unknown-time-zone.error';
import { parseDuration } from '../time/duration';
import { quoteInput } from '../utils/quote-input';
import { CronExpression } from './cron-expression';
import { CronOccurrence } from './cron-occurrence';
import { MAX_INSTANT_MS, MIN_INSTANT_MS } from './instant-range';
import { IntervalOccurrence } from './interval-occurrence';
import type { NextOccurrence } from './next-occurrence';
import type { DstGapPolicy, DstOverlapPolicy, RecurrenceSpec } from './recurrence-spec';
import { ZoneRules } from './zone-rules';

export interface CompileRecurrenceOptions {
  /**
   * The smallest spacing allowed between two occurrences, in milliseconds (such as the wheel's tick).
   * An interval below it is refused; so is a cron expression whose times of day are closer than it on
   * the wall clock. Default 1.
   */
  minIntervalMs?: number;
}

/** A recurrence with its defaults filled in: plain JSON, so that every node of a fleet compiles the same one. */
export type NormalizedRecurrence =
  | { readonly kind: 'cron'; readonly cron: string; readonly timeZone: string; readonly dstGap: DstGapPolicy; readonly dstOverlap: DstOverlapPolicy; readonly fixedTime: boolean }
  | { readonly kind: 'interval'; readonly everyMs: number; readonly anchorMs: number };

export interface CompiledRecurrence extends NextOccurrence {
  readonly spec: NormalizedRecurrence;
}

const CRON_FIELDS = ['cron', 'timeZone', 'dstGap', 'dstOverlap'];
const INTERVAL_FIELDS = ['every', 'anchor'];
const GAP_POLICIES: readonly DstGapPolicy[] = ['shift', 'skip'];
const OVERLAP_POLICIES: readonly DstOverlapPolicy[] = ['first', 'last'];

/**
 * Validates a recurrence spec and builds its next-time computation. Throws InvalidRecurrenceError,
 * InvalidCronExpressionError or UnknownTimeZoneError; nothing is kept from a spec that fails.
 */
export function compileRecurrence(spec: RecurrenceSpec, options: CompileRecurrenceOptions = {}): CompiledRecurrence {
  const minIntervalMs = options.minIntervalMs ?? 1;
  if (typeof minIntervalMs !== 'number' || !Number.isFinite(minIntervalMs) || minIntervalMs < 0) {
    throw new InvalidRecurrenceError(`minIntervalMs must be a finite number of milliseconds >= 0, got ${quoteInput(minIntervalMs)}`);
  }
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    throw new InvalidRecurrenceError(`expected { cron, timeZone?, dstGap?, dstOverlap? } or { every, anchor? }, got ${quoteInput(spec)}`);
  }
  const fields = spec as unknown as Record<string, unknown>;
  const hasCron = fields.cron !== undefined;
  const hasEvery = fields.every !== undefined;
  if (hasCron && hasEvery) {
    throw new InvalidRecurrenceError('give either cron (calendar and wall clock) or every (elapsed time), not both');
  }
  if (!hasCron && !hasEvery) {
    throw new InvalidRecurrenceError('give cron (such as "30 2 * * *") or every (such as "15m" or 900000 ms)');
  }
  rejectUnknownFields(fields, hasCron ? CRON_FIELDS : INTERVAL_FIELDS, hasCron ? 'a cron recurrence' : 'an interval recurrence');
  return hasCron ? compileCron(fields, minIntervalMs) : compileInterval(fields, minIntervalMs);
}

function compileCron(fields: Record<string, unknown>, minIntervalMs: number): CompiledRecurrence {
  const expression = CronExpression.parse(fields.cron);
  const zone = zoneRules(fields.timeZone);
  const dstGap = policy(fields.dstGap, 'dstGap', GAP_POLICIES, 'shift');
  const dstOverlap = policy(fields.dstOverlap, 'dstOverlap', OVERLAP_POLICIES, 'first');
  if (!expression.fixedTime && (fields.dstGap !== undefined || fields.dstOverlap !== undefined)) {
    throw new InvalidRecurrenceError(
      `dstGap and dstOverlap apply to fixed-time schedules only (seconds, minutes and hours made of numbers, no * or step); ` +
        `${quoteInput(expression.expression)} follows the wall clock: a time the clock skips does not fire, a time it shows twice fires twice`,
    );
  }
  if (minIntervalMs > 1000) {
    const spacing = expression.minWallSpacingMs();
    if (spacing < minIntervalMs) {
      throw new InvalidRecurrenceError(`cron ${quoteInput(expression.expression)} can fire ${spacing} ms apart, below the minimum of ${minIntervalMs} ms`);
    }
  }
  const occurrence = new CronOccurrence(expression, zone, dstGap, dstOverlap);
  const spec: NormalizedRecurrence = {
    kind: 'cron',
    cron: expression.expression,
    timeZone: zone.timeZone,
    dstGap,
    dstOverlap,
    fixedTime: expression.fixedTime,
  };
  return { spec, after: (instantMs) => occurrence.after(instantMs), atOrBefore: (instantMs) => occurrence.atOrBefore(instantMs) };
}

function compileInterval(fields: Record<string, unknown>, minIntervalMs: number): CompiledRecurrence {
  let everyMs: number;
  try {
    everyMs = parseDuration(fields.every);
  } catch (error) {
    throw new InvalidRecurrenceError(`every: ${error instanceof Error ? error.message : String(error)}`, error);
  }
  if (everyMs <= 0) throw new InvalidRecurrenceError(`every must be more than zero, got ${quoteInput(fields.every)}`);
  if (everyMs < minIntervalMs) {
    throw new InvalidRecurrenceError(`every ${quoteInput(fields.every)} (${everyMs} ms) is below the minimum of ${minIntervalMs} ms`);
  }
  if (everyMs > MAX_INSTANT_MS) throw new InvalidRecurrenceError(`every ${quoteInput(fields.every)} is longer than the Date range`);
  const anchorMs = anchor(fields.anchor);
  const occurrence = new IntervalOccurrence(everyMs, anchorMs);
  return {
    spec: { kind: 'interval', everyMs, anchorMs },
    after: (instantMs) => occurrence.after(instantMs),
    atOrBefore: (instantMs) => occurrence.atOrBefore(instantMs),
    countBetween: (lowMs, highMs) => occurrence.countBetween(lowMs, highMs),
  };
}

/**
 * Zone rules already built, by the name given: an Intl.DateTimeFormat is
 * costly to make (and to collect), and every upsertRecurring compiles its
 * recurrence. Rules are facts about a zone, so one object serves every
 * schedule in it. Bounded, oldest out first: names come from callers.
 */
const zones = new Map<string, ZoneRules>();
const MAX_ZONES = 64;

function zoneRules(timeZone: unknown): ZoneRules {
  const name = timeZone === undefined ? 'UTC' : timeZone;
  if (typeof name !== 'string' || name.trim() === '') throw new UnknownTimeZoneError(timeZone);
  const known = zones.get(name);
  if (known) return known;
  let rules: ZoneRules;
  try {
    rules = new ZoneRules(name);
  } catch (error) {
    throw new UnknownTimeZoneError(timeZone, error);
  }
  if (zones.size >= MAX_ZONES) zones.delete(zones.keys().next().value as string);
  zones.set(name, rules);
  return rules;
}

function policy<T extends string>(value: unknown, name: string, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (!allowed.includes(value as T)) {
    throw new InvalidRecurrenceError(`${name} must be ${allowed.map((each) => `'${each}'`).join(' or ')}, got ${quoteInput(value)}`);
  }
  return value as T;
}

function anchor(value: unknown): number {
  if (value === undefined) return 0;
  const ms = value instanceof Date ? value.getTime() : value;
  if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < MIN_INSTANT_MS || ms > MAX_INSTANT_MS) {
    throw new InvalidRecurrenceError(`anchor must be a valid Date or whole epoch milliseconds between the years 100 and 9999, got ${quoteInput(value)}`);
  }
  return ms;
}

function rejectUnknownFields(fields: Record<string, unknown>, allowed: readonly string[], what: string): void {
  const unknown = Object.keys(fields).filter((key) => !allowed.includes(key) && fields[key] !== undefined);
  if (unknown.length === 0) return;
  const described = unknown.map((key) => {
    const near = [...CRON_FIELDS, ...INTERVAL_FIELDS].find((known) => known.toLowerCase() === key.toLowerCase());
    return near !== undefined && allowed.includes(near) ? `${quoteInput(key)} (did you mean "${near}"?)` : quoteInput(key);
  });
  throw new InvalidRecurrenceError(`unknown field${unknown.length > 1 ? 's' : ''} ${described.join(', ')} for ${what}; allowed: ${allowed.join(', ')}`);
}
