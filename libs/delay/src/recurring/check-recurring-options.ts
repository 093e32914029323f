import { InvalidRecurrenceError } from '../errors/invalid-recurrence.error';
import type { OverlapPolicy } from '../interfaces/delay-driver.interface';
import { parseDuration } from '../time/duration';
import { quoteInput } from '../utils/quote-input';
import { compileRecurrence, CompiledRecurrence } from './compile-recurrence';
import type { RecurrenceSpec } from './recurrence-spec';
import type { OrphanPolicy, RecurringOptions } from './recurring-options';
import type { StoredMissedPolicy } from './series-state';

const POLICY_FIELDS = ['missed', 'overlap', 'jitter', 'payload'];
const OVERLAPS: readonly OverlapPolicy[] = ['skip', 'bufferOne', 'allow', 'cancelPrevious'];

/** A schedule's options checked and split into its compiled recurrence and stored policies (payload still unserialised). */
export interface CheckedRecurring {
  readonly compiled: CompiledRecurrence;
  readonly missed: StoredMissedPolicy;
  readonly overlap: OverlapPolicy;
  readonly jitterMs: number;
}

/** How a recurrence is compiled: compileRecurrence, or a caller's memo of it (upsertRecurringMany compiles each distinct one once). */
export type CompileRecurrence = (spec: RecurrenceSpec, options: { readonly minIntervalMs: number }) => CompiledRecurrence;

/** Checks a schedule's options; throws InvalidRecurrenceError (or the cron and zone errors) and keeps nothing. */
export function checkRecurringOptions(options: RecurringOptions | undefined, minIntervalMs: number, compile: CompileRecurrence = compileRecurrence): CheckedRecurring {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new InvalidRecurrenceError(`expected { cron, timeZone? } or { every } with missed?, overlap?, jitter?, payload?; got ${quoteInput(options)}`);
  }
  const fields = options as unknown as Record<string, unknown>;
  const spec: Record<string, unknown> = {};
  for (const name of Object.keys(fields)) if (!POLICY_FIELDS.includes(name)) spec[name] = fields[name];
  const compiled = compile(spec as unknown as RecurrenceSpec, { minIntervalMs });
  return { compiled, missed: missedPolicy(fields.missed), overlap: overlapPolicy(fields.overlap), jitterMs: jitter(fields.jitter, compiled) };
}

/** A declaration's orphan policy: 'remove' or 'keep'. */
export function checkOrphanPolicy(value: unknown): OrphanPolicy {
  if (value === 'remove' || value === 'keep') return value;
  throw new InvalidRecurrenceError(`orphan must be 'remove' or 'keep', got ${quoteInput(value)}`);
}

function missedPolicy(value: unknown): StoredMissedPolicy {
  if (value === undefined || value === 'once') return { kind: 'once' };
  if (value === 'skip' || value === 'all') return { kind: value };
  if (typeof value === 'object' && value !== null && 'within' in value) {
    const withinMs = duration((value as { within: unknown }).within, 'missed.within');
    return { kind: 'within', withinMs };
  }
  throw new InvalidRecurrenceError(`missed must be 'skip', 'once', 'all' or { within: duration }, got ${quoteInput(value)}`);
}

function overlapPolicy(value: unknown): OverlapPolicy {
  if (value === undefined) return 'skip';
  if (OVERLAPS.includes(value as OverlapPolicy)) return value as OverlapPolicy;
  throw new InvalidRecurrenceError(`overlap must be ${OVERLAPS.map((each) => `'${each}'`).join(', ')}, got ${quoteInput(value)}`);
}

function jitter(value: unknown, compiled: CompiledRecurrence): number {
  if (value === undefined) return 0;
  const ms = duration(value, 'jitter');
  if (compiled.spec.kind === 'interval' && ms >= compiled.spec.everyMs) {
    throw new InvalidRecurrenceError(`jitter (${ms} ms) must be shorter than the interval (${compiled.spec.everyMs} ms)`);
  }
  return ms;
}

function duration(value: unknown, name: string): number {
  try {
    return parseDuration(value);
  } catch (error) {
    throw new InvalidRecurrenceError(`${name}: ${error instanceof Error ? error.message : String(error)}`, error);
  }
}
