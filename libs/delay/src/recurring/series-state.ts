import type { OverlapPolicy } from '../interfaces/delay-driver.interface';
import type { NormalizedRecurrence } from './compile-recurrence';
import type { DstGapPolicy, DstOverlapPolicy } from './recurrence-spec';
import type { RecurrenceSpec } from './recurrence-spec';
import type { MissedRunPolicy } from './recurring-options';

/** The missed-run policy as stored: `withinMs` only for 'within'. */
export type StoredMissedPolicy = { readonly kind: 'skip' | 'once' | 'all' } | { readonly kind: 'within'; readonly withinMs: number };

/**
 * What a series' tick carries as its payload: everything the ticker needs,
 * so that any instance (whatever code it runs) computes the same next step
 * from the tick alone. Stored as encodeSeriesState writes it; `v` is the
 * format's version.
 */
export interface SeriesState {
  readonly v: 1;
  readonly spec: NormalizedRecurrence;
  readonly missed: StoredMissedPolicy;
  readonly overlap: OverlapPolicy;
  readonly jitterMs: number;
  /** The occurrences' payload as JSON text. */
  readonly payload?: string;
  /** The scheduled instant of the latest occurrence reached (fired or missed), or null before the first. */
  readonly last: number | null;
  /** Overlap 'bufferOne': the instant of the occurrence held back until the previous one ends (created by a later step). */
  readonly buffered?: number;
  /** The next tick counts from its own arming time (a new schedule, a changed recurrence): nothing before it fires. */
  readonly reset: boolean;
  readonly paused: boolean;
  /** Declared by @Recurring. */
  readonly declared: boolean;
  /** Of a declared schedule: 'keep' when it must not be removed once no instance declares it (absent: 'remove'). */
  readonly orphan?: 'keep';
}

/** The stored recurrence back in the form compileRecurrence and users read. */
export function recurrenceOf(spec: NormalizedRecurrence): RecurrenceSpec {
  if (spec.kind === 'interval') return { every: spec.everyMs, anchor: spec.anchorMs };
  return spec.fixedTime ? { cron: spec.cron, timeZone: spec.timeZone, dstGap: spec.dstGap, dstOverlap: spec.dstOverlap } : { cron: spec.cron, timeZone: spec.timeZone };
}

export function missedOf(policy: StoredMissedPolicy): MissedRunPolicy {
  return policy.kind === 'within' ? { within: policy.withinMs } : policy.kind;
}

/**
 * The stored form starts with this mark, which no JSON text (nor a batch's
 * '#') starts with: a store can tell a tick from any other action by its
 * payload alone (the Redis scripts do, see lua/include/tick.lua).
 */
export const SERIES_STATE_MARK = '@1';

const MISSED_CODES: Readonly<Record<Exclude<StoredMissedPolicy['kind'], 'within'>, string>> = { once: '', skip: 's', all: 'a' };
const OVERLAP_CODES: Readonly<Record<OverlapPolicy, string>> = { skip: '', bufferOne: 'b', allow: 'a', cancelPrevious: 'c' };
/** dstGap then dstOverlap, the defaults ('shift', 'first') stored as ''. */
const DST_CODES: Readonly<Record<string, string>> = { 'shift first': '', 'shift last': 'sl', 'skip first': 'kf', 'skip last': 'kl' };
/** Fields before the payload: the mark, the kind, 2 (interval) or 3 (cron) of the recurrence, then missed, overlap, jitter, last, flags. */
const HEAD_FIELDS = { i: 9, c: 10 } as const;
/** Of those, the mark, the kind and the recurrence's own fields. */
const SPEC_FIELDS = { i: 4, c: 5 } as const;

/**
 * One positional line, fields joined by '|', the payload last (it may hold
 * '|'): a tick is the bulk of a schedule's stored bytes, so defaults are
 * empty fields and numbers are in base 36, as envelopes keep due times.
 *   @1|c|cron|zone ('' = UTC)|dst|missed|overlap|jitter|last|flags|payload
 *   @1|i|every|anchor|missed|overlap|jitter|last|flags|payload
 * missed: '' once, 's' skip, 'a' all, 'w' + ms within; overlap: '' skip,
 * 'b', 'a', 'c'; last '' before the first occurrence, then '+' and the
 * instant 'bufferOne' holds back, if any; flags: r reset,
 * p paused, d declared, k orphan keep, f fixed time; payload '' for none.
 */
export function encodeSeriesState(state: SeriesState): string {
  const { spec } = state;
  const recurrence = storedRecurrence(spec);
  const missed = state.missed.kind === 'within' ? `w${state.missed.withinMs.toString(36)}` : MISSED_CODES[state.missed.kind];
  const flags = (state.reset ? 'r' : '') + (state.paused ? 'p' : '') + (state.declared ? 'd' : '') + (state.orphan === 'keep' ? 'k' : '') + (spec.kind === 'cron' && spec.fixedTime ? 'f' : '');
  const jitter = state.jitterMs === 0 ? '' : state.jitterMs.toString(36);
  // A held-back instant rides after the last one, past a '+' (which no base-36 number holds, so older code reads the last alone).
  const last = (state.last === null ? '' : state.last.toString(36)) + (state.buffered === undefined ? '' : `+${state.buffered.toString(36)}`);
  return `${SERIES_STATE_MARK}|${recurrence}|${missed}|${OVERLAP_CODES[state.overlap]}|${jitter}|${last}|${flags}|${state.payload ?? ''}`;
}

/** The stored fields of each recurrence written lately (a tick writes its recurrence at every step: it is formatted once). */
const storedRecurrences = new WeakMap<NormalizedRecurrence, string>();

function storedRecurrence(spec: NormalizedRecurrence): string {
  let text = storedRecurrences.get(spec);
  if (text === undefined) {
    text =
      spec.kind === 'cron'
        ? `c|${spec.cron}|${spec.timeZone === 'UTC' ? '' : spec.timeZone}|${DST_CODES[`${spec.dstGap} ${spec.dstOverlap}`]}`
        : `i|${spec.everyMs.toString(36)}|${spec.anchorMs.toString(36)}`;
    storedRecurrences.set(spec, text);
  }
  return text;
}

/** The state a tick carries; undefined when the payload is not one (an action this library did not arm). */
export function decodeSeriesState(payload: string | undefined): SeriesState | undefined {
  if (payload === undefined || !payload.startsWith(`${SERIES_STATE_MARK}|`)) return undefined;
  const kind = payload.charAt(SERIES_STATE_MARK.length + 1);
  if (kind !== 'c' && kind !== 'i') return undefined;
  const fields: string[] = [];
  const specFields = SPEC_FIELDS[kind];
  let at = 0;
  let specEnd = 0;
  for (let n = 0; n < HEAD_FIELDS[kind]; n++) {
    const bar = payload.indexOf('|', at);
    if (bar < 0) return undefined;
    fields.push(payload.slice(at, bar));
    at = bar + 1;
    if (n === specFields - 1) specEnd = bar;
  }
  const rest = payload.slice(at);
  // The mark, the kind and the recurrence's fields name the spec.
  const spec = cachedSpec(payload.slice(0, specEnd), fields, kind);
  const missed = missedOfCode(fields[specFields]);
  const overlap = OVERLAP_BY_CODE.get(fields[specFields + 1]);
  const jitter = fields[specFields + 2];
  const last = fields[specFields + 3];
  const flags = fields[specFields + 4];
  const jitterMs = jitter === '' ? 0 : parseInt(jitter, 36);
  // The last instant, then past a '+' the held-back one if any (base-36 parsing stops at any further '+').
  const plus = last.indexOf('+');
  const lastPart = plus < 0 ? last : last.slice(0, plus);
  const bufferedPart = plus < 0 ? undefined : last.slice(plus + 1);
  const lastMs = lastPart === '' ? null : parseInt(lastPart, 36);
  const buffered = bufferedPart === undefined ? undefined : parseInt(bufferedPart, 36);
  if (!spec || !missed || !overlap || Number.isNaN(jitterMs) || Number.isNaN(lastMs) || Number.isNaN(buffered)) return undefined;
  return {
    v: 1,
    spec,
    missed,
    overlap,
    jitterMs,
    payload: rest === '' ? undefined : rest,
    last: lastMs,
    buffered,
    reset: flags.includes('r'),
    paused: flags.includes('p'),
    declared: flags.includes('d'),
    orphan: flags.includes('k') ? 'keep' : undefined,
  };
}

/** The recurrences decoded lately, by their stored fields: a tick's spec is parsed once, not at every tick (at most SPEC_CACHE_SIZE kept). */
const specs = new Map<string, NormalizedRecurrence>();
const SPEC_CACHE_SIZE = 1024;
/** Overlap policies by stored code. */
const OVERLAP_BY_CODE = new Map(Object.entries(OVERLAP_CODES).map(([policy, code]) => [code, policy as OverlapPolicy]));

/**
 * The recurrence of a stored state, shared (frozen) between the states that store the same one: the fields of the
 * recurrence (and, for a cron, the fixed-time flag) name it, and a shared spec also keeps CompiledRecurrences from
 * serializing it at every tick.
 */
function cachedSpec(stored: string, fields: readonly string[], kind: 'c' | 'i'): NormalizedRecurrence | undefined {
  const fixedTime = kind === 'c' && fields[HEAD_FIELDS.c - 1].includes('f');
  const id = fixedTime ? `${stored}|f` : stored;
  const known = specs.get(id);
  if (known) return known;
  const spec = kind === 'c' ? cronSpec(fields, fixedTime) : intervalSpec(fields);
  if (!spec) return undefined;
  if (specs.size >= SPEC_CACHE_SIZE) specs.delete(specs.keys().next().value as string);
  specs.set(id, Object.freeze(spec));
  return spec;
}

function cronSpec([, , cron, zone, dst]: readonly string[], fixedTime: boolean): NormalizedRecurrence | undefined {
  const policies = keyOf(DST_CODES, dst)?.split(' ') as [DstGapPolicy, DstOverlapPolicy] | undefined;
  if (!policies || cron === '') return undefined;
  return { kind: 'cron', cron, timeZone: zone === '' ? 'UTC' : zone, dstGap: policies[0], dstOverlap: policies[1], fixedTime };
}

function intervalSpec([, , every, anchor]: readonly string[]): NormalizedRecurrence | undefined {
  const everyMs = parseInt(every, 36);
  const anchorMs = parseInt(anchor, 36);
  return Number.isNaN(everyMs) || Number.isNaN(anchorMs) ? undefined : { kind: 'interval', everyMs, anchorMs };
}

function missedOfCode(code: string): StoredMissedPolicy | undefined {
  if (code.startsWith('w')) {
    const withinMs = parseInt(code.slice(1), 36);
    return Number.isNaN(withinMs) ? undefined : { kind: 'within', withinMs };
  }
  return MISSED_BY_CODE.get(code);
}

/** The policies without a parameter by stored code, each one shared object (a state is only read). */
const MISSED_BY_CODE = new Map(Object.entries(MISSED_CODES).map(([kind, code]) => [code, Object.freeze({ kind }) as StoredMissedPolicy]));

function keyOf<T extends string>(codes: Readonly<Record<T, string>>, code: string): T | undefined {
  return (Object.keys(codes) as T[]).find((name) => codes[name] === code);
}

/** Same recurrence (the next time must be computed again when it changed). */
export function sameSpec(a: NormalizedRecurrence, b: NormalizedRecurrence): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
