// Differential test: compileRecurrence against a brute-force reference (test/support/cron-reference.ts)
// that walks real instants minute by minute (second by second for 6-field expressions), reads local
// fields with Intl and applies the DST policies from their definitions. Random expressions, zones and
// start instants from a seeded generator, most of them within a day and a half before an offset change.
import { ReferenceCron, referenceFirings, type ReferencePolicies } from '../../../../test/support/cron-reference';
import { fieldsOfWall, findTransitions, localFields, wallOf } from '../../../../test/support/zone-fields';
import { seededRandom as seeded, type Random } from '../../../../test/support/seeded-random';
import { compileRecurrence } from './compile-recurrence';
import type { CronRecurrence } from './recurrence-spec';

const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)];
const integer = (random: Random, min: number, max: number): number => min + Math.floor(random() * (max - min + 1));

// Zones with unusual changes: midnight transitions (Santiago, Havana, Asuncion), 30-minute DST (Lord
// Howe), 2-hour DST (Troll), negative DST (Dublin), DST suspended for Ramadan (Casablanca), DST abolished
// (Tehran 2022, Sao Paulo 2019), Chatham's +12:45/+13:45, Apia's DST until 2021.
const INTERESTING_ZONES = [
  'Europe/Paris',
  'America/New_York',
  'America/Santiago',
  'America/Havana',
  'America/Asuncion',
  'America/Sao_Paulo',
  'Australia/Lord_Howe',
  'Antarctica/Troll',
  'Europe/Dublin',
  'Africa/Casablanca',
  'Asia/Tehran',
  'Pacific/Chatham',
  'Pacific/Apia',
  'Asia/Gaza',
  'Australia/Sydney',
  'America/St_Johns',
];
const ALL_ZONES = Intl.supportedValuesOf('timeZone');

function timeField(random: Random, fixed: readonly string[], wall: readonly string[], fixedShare: number): string {
  return random() < fixedShare ? pick(random, fixed) : pick(random, wall);
}

/** Local hours and minutes where an offset change happens, so that fixed times land in its gap or overlap. */
interface Aim {
  hours: string[];
  minutes: string[];
}

function aimAt(timeZone: string, transitionMs: number): Aim {
  const lastBefore = localFields(timeZone, transitionMs - 1000);
  const firstAfter = localFields(timeZone, transitionMs);
  // Forward: the first skipped minute is just after the last wall time before the change. Back: the
  // first repeated one is the first wall time after it.
  const skipped = fieldsOfWall(wallOf(lastBefore) + 1000);
  return {
    hours: [String(skipped.hour), String(firstAfter.hour), `${skipped.hour},${(skipped.hour + 12) % 24}`],
    minutes: [String(skipped.minute), String(firstAfter.minute), String((firstAfter.minute + 15) % 60), String((skipped.minute + 20) % 60)],
  };
}

function randomExpression(random: Random, withSeconds: boolean, aim: Aim | null): string {
  if (!withSeconds && random() < 0.05) return pick(random, ['@hourly', '@daily', '@weekly', '@monthly']);
  const aimed = aim !== null && random() < 0.6;
  const fixedMinutes = aimed ? aim.minutes : ['0', '30', '59', '0,30', '15-16', String(integer(random, 0, 59))];
  const fixedHours = aimed ? aim.hours : ['0', '1', '2', '3', '23', '1,2', '1-3', '2,14', String(integer(random, 0, 23))];
  const minute = timeField(random, fixedMinutes, ['*/15', '*/30', '*/7', '*', '10-50/20'], 0.6);
  const hour = timeField(random, fixedHours, ['*', '*/2', '*/3', '0-6/2'], 0.6);
  const days = aimed ? 0.85 : 0.5; // share of unrestricted days
  const dayOfMonth = random() < days ? '*' : pick(random, ['L', 'LW', '15W', '1W', '1-15', '*/2', '29,30,31', '?']);
  const month = random() < days ? '*' : pick(random, ['3,10', 'MAR,OCT,NOV', '*/3', '4-9']);
  const dayOfWeek = random() < days ? '*' : pick(random, ['MON-FRI', 'SUN', 'SAT,SUN', 'SUN#1', '5L', '1#2', '+MON-FRI', '6L', '0-3']);
  const fields = [minute, hour, dayOfMonth, month, dayOfWeek];
  if (withSeconds) fields.unshift(timeField(random, ['0', '30', '0,30', '15-17'], ['*/20', '*/30', '*', '5-55/25'], 0.6));
  return fields.join(' ');
}

interface Case {
  spec: CronRecurrence;
  fromMs: number;
  toMs: number;
  stepMs: number;
  /** How far before and after the range the reference walks: more than any overlap (Troll's is 2 hours). */
  marginMs: number;
}

function randomCase(random: Random, withSeconds: boolean): Case {
  const timeZone = random() < 0.6 ? pick(random, INTERESTING_ZONES) : pick(random, ALL_ZONES);
  const year = integer(random, 1995, 2035);
  const transitions = findTransitions(timeZone, Date.UTC(year, 0, 1), Date.UTC(year + 1, 0, 1));
  const span = withSeconds ? 90 * 60_000 : 36 * 3_600_000;
  const transition = transitions.length > 0 && random() < 0.85 ? pick(random, transitions) : null;
  const fromMs =
    transition !== null
      ? transition - Math.floor(random() * span * 0.8)
      : Date.UTC(year, 0, 1) + Math.floor(random() * 365 * 86_400_000);
  const cron = randomExpression(random, withSeconds, transition === null ? null : aimAt(timeZone, transition));
  const policies: Partial<CronRecurrence> = {};
  if (new ReferenceCron(cron).fixedTime) {
    if (random() < 0.5) policies.dstGap = pick(random, ['shift', 'skip'] as const);
    if (random() < 0.5) policies.dstOverlap = pick(random, ['first', 'last'] as const);
  }
  return { spec: { cron, timeZone, ...policies }, fromMs, toMs: fromMs + span, stepMs: withSeconds ? 1000 : 60_000, marginMs: withSeconds ? 125 * 60_000 : 3 * 3_600_000 };
}

/** Walks the compiled recurrence from fromMs and compares each result with the reference; returns a description of the first difference. */
function compare(testCase: Case): string | null {
  const { spec, fromMs, toMs, stepMs, marginMs } = testCase;
  const policies: ReferencePolicies = { dstGap: spec.dstGap ?? 'shift', dstOverlap: spec.dstOverlap ?? 'first' };
  const expected = referenceFirings(new ReferenceCron(spec.cron), spec.timeZone ?? 'UTC', fromMs, toMs, stepMs, policies, marginMs);
  const recurrence = compileRecurrence(spec);
  let at = fromMs;
  for (let i = 0; ; i++) {
    const actual = recurrence.after(at);
    const want = i < expected.length ? expected[i] : null;
    const iso = (ms: number | null): string => (ms === null ? 'null' : new Date(ms).toISOString());
    const where = `${JSON.stringify(spec)} from ${iso(fromMs)}: after(${iso(at)})`;
    if (want === null) {
      return actual === null || actual > toMs ? null : `${where} = ${iso(actual)}, the reference has nothing up to ${iso(toMs)}`;
    }
    if (actual !== want) return `${where} = ${iso(actual)}, the reference says ${iso(want)}`;
    at = actual;
  }
}

/**
 * Asks atOrBefore about every firing of the reference, the instants either side of it and random
 * instants of the range; returns a description of the first difference.
 */
function compareBackward(testCase: Case, random: Random): string | null {
  const { spec, fromMs, toMs, stepMs, marginMs } = testCase;
  const policies: ReferencePolicies = { dstGap: spec.dstGap ?? 'shift', dstOverlap: spec.dstOverlap ?? 'first' };
  const expected = referenceFirings(new ReferenceCron(spec.cron), spec.timeZone ?? 'UTC', fromMs, toMs, stepMs, policies, marginMs);
  const recurrence = compileRecurrence(spec);
  const asked = [toMs, ...expected.flatMap((instant) => [instant - 1, instant, instant + 1])];
  for (let i = 0; i < 40; i++) asked.push(fromMs + 1 + Math.floor(random() * (toMs - fromMs)));
  const iso = (ms: number | null): string => (ms === null ? 'null' : new Date(ms).toISOString());
  for (const at of asked) {
    if (at <= fromMs || at > toMs) continue;
    const actual = recurrence.atOrBefore(at);
    const want = expected.filter((instant) => instant <= at).pop();
    const where = `${JSON.stringify(spec)} from ${iso(fromMs)}: atOrBefore(${iso(at)}) = ${iso(actual)}`;
    if (want === undefined) {
      // The reference knows nothing before the range: the answer must be before it.
      if (actual !== null && actual > fromMs) return `${where}, the reference has nothing from ${iso(fromMs)} up to it`;
    } else if (actual !== want) {
      return `${where}, the reference says ${iso(want)}`;
    }
  }
  return null;
}

describe('atOrBefore (cron) against the same reference', () => {
  it('agrees minute by minute on 5-field expressions in random zones, mostly around offset changes', () => {
    const random = seeded(20261128);
    const differences: string[] = [];
    for (let i = 0; i < 120; i++) {
      const difference = compareBackward(randomCase(random, false), random);
      if (difference !== null) differences.push(difference);
    }
    expect(differences).toEqual([]);
  });

  it('agrees second by second on 6-field expressions (seconds first) around offset changes', () => {
    const random = seeded(11);
    const differences: string[] = [];
    for (let i = 0; i < 12; i++) {
      const difference = compareBackward(randomCase(random, true), random);
      if (difference !== null) differences.push(difference);
    }
    expect(differences).toEqual([]);
  });
});

describe('compileRecurrence (cron) against a brute-force reference', () => {
  it('agrees minute by minute on 5-field expressions in random zones, mostly around offset changes', () => {
    const random = seeded(20261126);
    const differences: string[] = [];
    let compared = 0;
    for (let i = 0; i < 120; i++) {
      const difference = compare(randomCase(random, false));
      compared++;
      if (difference !== null) differences.push(difference);
    }
    expect(differences).toEqual([]);
    expect(compared).toBe(120);
  });

  it('agrees second by second on 6-field expressions (seconds first) around offset changes', () => {
    const random = seeded(7);
    const differences: string[] = [];
    for (let i = 0; i < 12; i++) {
      const difference = compare(randomCase(random, true));
      if (difference !== null) differences.push(difference);
    }
    expect(differences).toEqual([]);
  });

  it('the generator does reach overlaps, gaps and both kinds of schedule', () => {
    const random = seeded(20261126);
    let fixed = 0;
    let wallClock = 0;
    let nearChange = 0;
    for (let i = 0; i < 120; i++) {
      const testCase = randomCase(random, false);
      if (new ReferenceCron(testCase.spec.cron).fixedTime) fixed++;
      else wallClock++;
      if (findTransitions(testCase.spec.timeZone ?? 'UTC', testCase.fromMs, testCase.toMs, 3_600_000).length > 0) nearChange++;
    }
    expect(fixed).toBeGreaterThan(25);
    expect(wallClock).toBeGreaterThan(25);
    expect(nearChange).toBeGreaterThan(60);
  });
});
