import { compileRecurrence } from './compile-recurrence';
import { CronExpression } from './cron-expression';
import { CronOccurrence } from './cron-occurrence';
import type { NextOccurrence } from './next-occurrence';
import type { RecurrenceSpec } from './recurrence-spec';
import type { StoredMissedPolicy } from './series-state';
import { MAX_CATCH_UP, MAX_COUNTED, MISSED_GRACE_MS, planTick } from './tick-plan';
import { ZoneRules } from './zone-rules';

const HOUR = 3_600_000;
const hourly = compileRecurrence({ every: '1h' });
const at = (iso: string): number => Date.parse(iso);
const DAY = 86_400_000;

/** The recurrence with its calls counted: the plan's work, whatever the machine's load. */
function counted(recurrence: NextOccurrence): { recurrence: NextOccurrence; calls: () => number } {
  let calls = 0;
  const wrapped: NextOccurrence = {
    after: (instant) => (calls++, recurrence.after(instant)),
    atOrBefore: (instant) => (calls++, recurrence.atOrBefore(instant)),
  };
  if (recurrence.countBetween) wrapped.countBetween = (low, high) => (calls++, (recurrence.countBetween as (l: number, h: number) => number)(low, high));
  return { recurrence: wrapped, calls: () => calls };
}

/** The plan worked out the plain way: every due occurrence walked forward from `from`. */
function walkedPlan(recurrence: NextOccurrence, missed: StoredMissedPolicy, from: number, now: number): { fire: number[]; missed: number; last: number; next: number | null } {
  const due: number[] = [];
  let t = recurrence.after(from);
  for (; t !== null && t <= now; t = recurrence.after(t)) due.push(t);
  if (due.length === 0) return { fire: [], missed: 0, last: from, next: t };
  const latest = due[due.length - 1];
  const windowMs = missed.kind === 'within' ? Math.max(missed.withinMs, MISSED_GRACE_MS) : Number.POSITIVE_INFINITY;
  const fire =
    missed.kind === 'skip'
      ? due.filter((instant) => instant === latest && now - instant <= MISSED_GRACE_MS)
      : missed.kind === 'once'
        ? [latest]
        : due.filter((instant) => now - instant <= windowMs).slice(-MAX_CATCH_UP);
  return { fire, missed: due.length - fire.length, last: latest, next: t };
}

describe('planTick', () => {
  it('an on-time tick fires its one occurrence and plans the next', () => {
    const plan = planTick(hourly, { kind: 'once' }, at('2026-06-01T00:00:00Z'), at('2026-06-01T01:00:00.004Z'));
    expect(plan).toEqual({ fire: [at('2026-06-01T01:00:00Z')], missed: 0, missedExact: true, last: at('2026-06-01T01:00:00Z'), next: at('2026-06-01T02:00:00Z') });
  });

  it('nothing due: nothing fires, last stays, next is the first after it', () => {
    const from = at('2026-06-01T00:30:00Z');
    expect(planTick(hourly, { kind: 'all' }, from, at('2026-06-01T00:59:59Z'))).toEqual({ fire: [], missed: 0, missedExact: true, last: from, next: at('2026-06-01T01:00:00Z') });
  });

  describe('five missed hours, the tick running at 05:30', () => {
    const from = at('2026-06-01T00:00:00Z');
    const now = at('2026-06-01T05:30:00Z');
    const hours = [1, 2, 3, 4, 5].map((h) => from + h * HOUR);
    it.each([
      [{ kind: 'skip' } as const, []],
      [{ kind: 'once' } as const, hours.slice(4)],
      [{ kind: 'all' } as const, hours],
      [{ kind: 'within', withinMs: 2 * HOUR } as const, hours.slice(3)],
    ])('%j', (missed, fire) => {
      const plan = planTick(hourly, missed, from, now);
      expect(plan.fire).toEqual(fire);
      expect(plan.missed).toBe(5 - fire.length);
      expect(plan.last).toBe(hours[4]);
      expect(plan.next).toBe(at('2026-06-01T06:00:00Z'));
    });
  });

  it('skip still fires the latest occurrence when the tick is late by less than the grace', () => {
    const from = at('2026-06-01T00:00:00Z');
    expect(planTick(hourly, { kind: 'skip' }, from, from + HOUR + MISSED_GRACE_MS).fire).toEqual([from + HOUR]);
    expect(planTick(hourly, { kind: 'skip' }, from, from + HOUR + MISSED_GRACE_MS + 1).fire).toEqual([]);
  });

  describe('within below the grace is honoured as given (every 5 s, paused 40 s: the 8 passed are 2.5 to 37.5 s old)', () => {
    const every5s = compileRecurrence({ every: '5s' });
    const from = at('2026-06-01T00:00:00Z');
    const now = from + 40_000 + 2_500;
    it.each([
      [12_000, 2],
      [30_000, 6],
      [0, 1],
    ])('within %d ms fires %d', (withinMs, count) => {
      const plan = planTick(every5s, { kind: 'within', withinMs }, from, now);
      expect(plan.fire).toHaveLength(count);
      expect(plan.fire.every((instant) => now - instant <= Math.max(withinMs, 2_500))).toBe(true);
      expect(plan.missed).toBe(8 - count);
    });

    it('the latest on time still fires, even when later than within (it is not missed)', () => {
      const hourlyFrom = at('2026-06-01T00:00:00Z');
      expect(planTick(hourly, { kind: 'within', withinMs: 1_000 }, hourlyFrom, hourlyFrom + HOUR + 30_000).fire).toEqual([hourlyFrom + HOUR]);
      expect(planTick(hourly, { kind: 'within', withinMs: 1_000 }, hourlyFrom, hourlyFrom + HOUR + MISSED_GRACE_MS + 1).fire).toEqual([]);
    });
  });

  it('all fires at most MAX_CATCH_UP, the latest; a very long gap of a per-second schedule stays bounded', () => {
    const everySecond = compileRecurrence({ every: '1s' });
    const from = at('2026-06-01T00:00:00Z');
    const plan = planTick(everySecond, { kind: 'all' }, from, from + 7 * 86_400_000);
    expect(plan.fire).toHaveLength(MAX_CATCH_UP);
    expect(plan.fire[MAX_CATCH_UP - 1]).toBe(from + 7 * 86_400_000);
    expect(plan.missed).toBeGreaterThan(80_000);
    expect(plan.next).toBe(from + 7 * 86_400_000 + 1000);
  });

  it('is deterministic: the same state and time plan the same thing', () => {
    const paris = compileRecurrence({ cron: '30 2 * * *', timeZone: 'Europe/Paris' });
    const from = at('2026-03-27T12:00:00Z');
    const now = at('2026-03-30T12:00:00Z');
    expect(planTick(paris, { kind: 'all' }, from, now)).toEqual(planTick(paris, { kind: 'all' }, from, now));
    expect(planTick(paris, { kind: 'all' }, from, now).fire.map((t) => new Date(t).toISOString())).toEqual([
      '2026-03-28T01:30:00.000Z',
      '2026-03-29T01:00:00.000Z',
      '2026-03-30T00:30:00.000Z',
    ]);
  });

  describe('a tick 30 days behind costs what it fires, not the gap (issue 31, point 6)', () => {
    // Across an offset change: Paris springs forward on 29 March 2026, Lord Howe goes back half an hour on 5 April.
    const latest = at('2026-04-20T10:15:30Z');
    const from = latest - 30 * DAY;
    const now = latest + 250;
    const secondsDue = 30 * 86_400;

    it.each(['UTC', 'Europe/Paris', 'Australia/Lord_Howe'])('every second in %s: once fires the latest, all the latest 1000, with a bounded number of steps', (timeZone) => {
      // Every real second is a wall second in these zones (offsets in whole seconds), so every second is due once.
      const expression = CronExpression.parse('* * * * * *');
      const zone = new ZoneRules(timeZone);
      const once = counted(new CronOccurrence(expression, zone, 'shift', 'first'));
      expect(planTick(once.recurrence, { kind: 'once' }, from, now)).toEqual({ fire: [latest], missed: secondsDue - 1, missedExact: false, last: latest, next: latest + 1000 });
      expect(once.calls()).toBeLessThanOrEqual(MAX_COUNTED + 3);

      const all = counted(new CronOccurrence(expression, zone, 'shift', 'first'));
      const plan = planTick(all.recurrence, { kind: 'all' }, from, now);
      expect(plan.fire).toEqual(Array.from({ length: MAX_CATCH_UP }, (_, i) => latest - (MAX_CATCH_UP - 1 - i) * 1000));
      expect(plan.missed).toBe(secondsDue - MAX_CATCH_UP);
      expect(plan.next).toBe(latest + 1000);
      expect(all.calls()).toBeLessThanOrEqual(MAX_CATCH_UP + MAX_COUNTED + 3);
      // Below the calls: croner steps and Intl look-ups stay few (days are matched and offsets read once per day).
      expect(expression.stepCount).toBeLessThan(20);
      expect(zone.lookupCount).toBeLessThan(100);
    });

    it.each(['Europe/Paris', 'Australia/Lord_Howe'])('every minute in %s: all fires the latest 1000 minutes, counted missed exactly at even spacing', (timeZone) => {
      const { recurrence, calls } = counted(compileRecurrence({ cron: '* * * * *', timeZone }));
      const minute = latest - 30_000;
      const plan = planTick(recurrence, { kind: 'all' }, minute - 30 * DAY, now);
      expect(plan.fire[0]).toBe(minute - (MAX_CATCH_UP - 1) * 60_000);
      expect(plan.fire).toHaveLength(MAX_CATCH_UP);
      expect(plan.missed).toBe(30 * 1440 - MAX_CATCH_UP);
      expect(calls()).toBeLessThanOrEqual(MAX_CATCH_UP + MAX_COUNTED + 3);
    });

    it('an interval counts its missed by arithmetic, exactly, in a few steps', () => {
      const { recurrence, calls } = counted(compileRecurrence({ every: '1s' }));
      expect(planTick(recurrence, { kind: 'once' }, from, now)).toEqual({ fire: [latest], missed: secondsDue - 1, missedExact: true, last: latest, next: latest + 1000 });
      expect(calls()).toBeLessThanOrEqual(4);
    });
  });

  describe('agrees with walking every due occurrence forward', () => {
    const policies: StoredMissedPolicy[] = [{ kind: 'skip' }, { kind: 'once' }, { kind: 'all' }, { kind: 'within', withinMs: 3 * HOUR }];
    const cases: [RecurrenceSpec, string, string][] = [
      [{ cron: '*/5 * * * *', timeZone: 'Europe/Paris' }, '2026-03-27T22:02:00Z', '2026-03-29T03:01:00Z'],
      [{ cron: '*/5 * * * *', timeZone: 'Europe/Paris' }, '2026-10-24T22:02:00Z', '2026-10-25T01:31:00Z'],
      [{ cron: '30 * * * *', timeZone: 'Australia/Lord_Howe' }, '2026-04-02T00:00:00Z', '2026-04-04T15:45:00Z'],
      [{ cron: '0 45 1 * * *', timeZone: 'Australia/Lord_Howe', dstOverlap: 'last' }, '2026-03-05T15:20:00Z', '2026-04-04T15:20:00Z'],
      [{ cron: '0 30 2 * * *', timeZone: 'Europe/Paris', dstGap: 'shift' }, '2026-03-01T00:00:00Z', '2026-03-29T01:00:01Z'],
      [{ cron: '0 0 29 2 *' }, '2019-01-01T00:00:00Z', '2029-01-01T00:00:00Z'],
      [{ cron: '0 9 * * MON-FRI', timeZone: 'America/New_York' }, '2026-02-20T00:00:00Z', '2026-03-20T13:30:00Z'],
      [{ every: '7m', anchor: 1_000 }, '2026-03-27T22:02:00Z', '2026-03-29T03:01:00Z'],
    ];
    it.each(cases)('%j from %s to %s', (spec, fromIso, nowIso) => {
      const recurrence = compileRecurrence(spec);
      for (const missed of policies) {
        const plan = planTick(recurrence, missed, at(fromIso), at(nowIso));
        expect({ policy: missed.kind, ...plan, missedExact: undefined }).toEqual({ policy: missed.kind, ...walkedPlan(recurrence, missed, at(fromIso), at(nowIso)), missedExact: undefined });
        expect(plan.missedExact).toBe(true);
      }
    });
  });
});
