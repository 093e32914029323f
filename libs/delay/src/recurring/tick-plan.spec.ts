import { compileRecurrence } from './compile-recurrence';
import { MAX_CATCH_UP, MISSED_GRACE_MS, planTick } from './tick-plan';

const HOUR = 3_600_000;
const hourly = compileRecurrence({ every: '1h' });
const at = (iso: string): number => Date.parse(iso);

describe('planTick', () => {
  it('an on-time tick fires its one occurrence and plans the next', () => {
    const plan = planTick(hourly, { kind: 'once' }, at('2026-06-01T00:00:00Z'), at('2026-06-01T01:00:00.004Z'));
    expect(plan).toEqual({ fire: [at('2026-06-01T01:00:00Z')], missed: 0, last: at('2026-06-01T01:00:00Z'), next: at('2026-06-01T02:00:00Z') });
  });

  it('nothing due: nothing fires, last stays, next is the first after it', () => {
    const from = at('2026-06-01T00:30:00Z');
    expect(planTick(hourly, { kind: 'all' }, from, at('2026-06-01T00:59:59Z'))).toEqual({ fire: [], missed: 0, last: from, next: at('2026-06-01T01:00:00Z') });
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
});
