import { compileRecurrence } from './compile-recurrence';
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
});
