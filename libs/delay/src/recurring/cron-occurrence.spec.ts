import { compileRecurrence } from './compile-recurrence';
import { Cron } from 'croner';
import { CronExpression } from './cron-expression';

describe('CronOccurrence', () => {
  afterEach(() => jest.restoreAllMocks());

  it.each([
    ['spring forward', '2026-03-29T00:50:00Z'],
    ['fall back, first pass', '2026-10-25T00:50:00Z'],
    ['fall back, second pass', '2026-10-25T01:50:00Z'],
  ])('every second fires every real second through the %s in Paris, asking croner for at most 3 wall times per call', (_label, fromIso) => {
    const recurrence = compileRecurrence({ cron: '* * * * * *', timeZone: 'Europe/Paris' });
    const nextWall = jest.spyOn(CronExpression.prototype, 'nextWall');
    let at = Date.parse(fromIso);
    let mostCalls = 0;
    const wrong: string[] = [];
    for (let i = 0; i < 1200; i++) {
      nextWall.mockClear();
      const next = recurrence.after(at);
      mostCalls = Math.max(mostCalls, nextWall.mock.calls.length);
      if (next !== at + 1000) wrong.push(`after(${new Date(at).toISOString()}) = ${next === null ? null : new Date(next).toISOString()}`);
      at += 1000;
    }
    expect(wrong).toEqual([]);
    expect(mostCalls).toBeLessThanOrEqual(3);
  });

  it.each([
    ['spring forward', '2026-03-29T01:20:00Z'],
    ['fall back, second pass', '2026-10-25T01:20:00Z'],
    ['fall back, first pass', '2026-10-25T00:20:00Z'],
  ])('walking back every second through the %s in Paris gives every real second, asking croner for a handful of dates in all', (_label, fromIso) => {
    const recurrence = compileRecurrence({ cron: '* * * * * *', timeZone: 'Europe/Paris' });
    const nextRun = jest.spyOn(Cron.prototype, 'nextRun');
    let at = Date.parse(fromIso);
    const wrong: string[] = [];
    for (let i = 0; i < 2400; i++) {
      const latest = recurrence.atOrBefore(at - 1);
      if (latest !== at - 1000) wrong.push(`atOrBefore(${new Date(at - 1).toISOString()}) = ${latest === null ? null : new Date(latest).toISOString()}`);
      at -= 1000;
    }
    expect(wrong).toEqual([]);
    expect(nextRun.mock.calls.length).toBeLessThan(10);
  });

  it.each([
    ['0 0 29 2 *', 'UTC', '2027-06-01T00:00:00Z', '2024-02-29T00:00:00.000Z'],
    ['0 12 * * FRI#2', 'UTC', '2026-05-20T00:00:00Z', '2026-05-08T12:00:00.000Z'],
    ['0 9 * JAN MON-FRI', 'UTC', '2026-06-01T00:00:00Z', '2026-01-30T09:00:00.000Z'],
    ['0 12 L * *', 'UTC', '2026-03-15T00:00:00Z', '2026-02-28T12:00:00.000Z'],
    ['0 0 1 1 *', 'UTC', '0100-06-01T00:00:00Z', null],
    // Paris skips 02:00-03:00 on 29 March 2026: 02:30 shifts to 03:00 local (01:00Z).
    ['30 2 * * *', 'Europe/Paris', '2026-03-29T01:00:00Z', '2026-03-29T01:00:00.000Z'],
    ['30 2 * * *', 'Europe/Paris', '2026-03-29T00:59:59Z', '2026-03-28T01:30:00.000Z'],
  ])('%s in %s: the last at or before %s is %s', (cron, timeZone, atIso, expected) => {
    const latest = compileRecurrence({ cron, timeZone }).atOrBefore(Date.parse(atIso));
    expect(latest === null ? null : new Date(latest).toISOString()).toBe(expected);
  });

  it('atOrBefore refuses what is not an instant and has nothing before the year 100', () => {
    const recurrence = compileRecurrence({ cron: '* * * * *' });
    expect(() => recurrence.atOrBefore(Number.NaN)).toThrow(RangeError);
    expect(recurrence.atOrBefore(-1e15)).toBeNull();
    expect(recurrence.atOrBefore(1e15)).toBe(Date.UTC(2999, 11, 31, 23, 59)); // croner finds nothing from 3000 on
  });
});
