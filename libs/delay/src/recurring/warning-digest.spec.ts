import { WarningDigest, type WarningKind } from './warning-digest';

const KIND: WarningKind = {
  one: (topic, key, count, detail) => `${topic}/${key}: ${count} (${detail})`,
  many: (topic, tally, intervalMs) => `${topic}: ${tally.total} more by ${tally.events} in ${intervalMs} ms, latest ${tally.lastKey} (${tally.lastDetail})`,
};

describe('WarningDigest', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('writes the first warning of a topic at once, then one line per topic and interval with counts', () => {
    const lines: string[] = [];
    const digest = new WarningDigest({ warn: (line) => lines.push(line) }, 10_000);
    for (let n = 0; n < 5000; n++) digest.note(KIND, 'missed', n % 2 === 0 ? 'a' : 'b', `k${n}`, 3, 'once');
    expect(lines).toEqual(['a/k0: 3 (once)', 'b/k1: 3 (once)']);
    jest.advanceTimersByTime(10_000);
    expect(lines.slice(2)).toEqual(['a: 7497 more by 2499 in 10000 ms, latest k4998 (once)', 'b: 7497 more by 2499 in 10000 ms, latest k4999 (once)']);
    // Still coming: the next interval ends with one line again, not with a line per warning.
    for (let n = 0; n < 1000; n++) digest.note(KIND, 'missed', 'a', `j${n}`, 1, 'once');
    jest.advanceTimersByTime(10_000);
    expect(lines.slice(4)).toEqual(['a: 1000 more by 1000 in 10000 ms, latest j999 (once)']);
    // Quiet for an interval: the topic's next warning is written at once.
    jest.advanceTimersByTime(10_000);
    digest.note(KIND, 'missed', 'a', 'late', 2, 'once');
    expect(lines.slice(5)).toEqual(['a/late: 2 (once)']);
    expect(lines).toHaveLength(6);
  });

  it('keeps kinds apart and writes what it gathered on flush', () => {
    const lines: string[] = [];
    const digest = new WarningDigest({ warn: (line) => lines.push(line) }, 10_000);
    digest.note(KIND, 'missed', 't', 'a', 1, 'x');
    digest.note(KIND, 'failed', 't', 'a', 1, 'down');
    digest.note(KIND, 'failed', 't', 'b', 1, 'down');
    digest.flush();
    expect(lines).toEqual(['t/a: 1 (x)', 't/a: 1 (down)', 't: 1 more by 1 in 10000 ms, latest b (down)']);
    expect(jest.getTimerCount()).toBe(0);
  });
});
