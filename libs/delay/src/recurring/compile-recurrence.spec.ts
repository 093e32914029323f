import { DelayError } from '../errors/delay.error';
import { InvalidCronExpressionError } from '../errors/invalid-cron-expression.error';
import { InvalidRecurrenceError } from '../errors/invalid-recurrence.error';
import { UnknownTimeZoneError } from '../errors/unknown-time-zone.error';
import { compileRecurrence, type CompileRecurrenceOptions } from './compile-recurrence';
import type { NextOccurrence } from './next-occurrence';
import type { RecurrenceSpec } from './recurrence-spec';

const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** The occurrences in (fromIso, toIso], as ISO strings. */
function between(recurrence: NextOccurrence, fromIso: string, toIso: string): string[] {
  const out: string[] = [];
  for (let next = recurrence.after(at(fromIso)); next !== null && next <= at(toIso); next = recurrence.after(next)) {
    out.push(new Date(next).toISOString());
  }
  return out;
}

/** Compiles a frozen copy of the spec: compiling never writes to what it is given. */
function compile(spec: RecurrenceSpec, options?: CompileRecurrenceOptions): NextOccurrence {
  return compileRecurrence(Object.freeze({ ...spec }), options);
}

describe('compileRecurrence: named DST cases', () => {
  describe('Europe/Paris, 02:30 every day', () => {
    it('on 2026-03-29 (02:00 → 03:00) fires once, at 03:00 CEST, with the default shift', () => {
      expect(between(compile({ cron: '30 2 * * *', timeZone: 'Europe/Paris' }), '2026-03-27T12:00:00Z', '2026-03-30T12:00:00Z')).toEqual([
        '2026-03-28T01:30:00.000Z', // 02:30 CET
        '2026-03-29T01:00:00.000Z', // 03:00 CEST, the first instant after the gap
        '2026-03-30T00:30:00.000Z', // 02:30 CEST
      ]);
    });

    it('on 2026-03-29 does not fire with dstGap skip', () => {
      expect(between(compile({ cron: '30 2 * * *', timeZone: 'Europe/Paris', dstGap: 'skip' }), '2026-03-27T12:00:00Z', '2026-03-30T12:00:00Z')).toEqual([
        '2026-03-28T01:30:00.000Z',
        '2026-03-30T00:30:00.000Z',
      ]);
    });

    it('on 2026-10-25 (03:00 → 02:00) fires once, at the first 02:30 (CEST) by default', () => {
      expect(between(compile({ cron: '30 2 * * *', timeZone: 'Europe/Paris' }), '2026-10-23T12:00:00Z', '2026-10-26T12:00:00Z')).toEqual([
        '2026-10-24T00:30:00.000Z',
        '2026-10-25T00:30:00.000Z', // 02:30 CEST
        '2026-10-26T01:30:00.000Z',
      ]);
    });

    it('on 2026-10-25 fires once, at the second 02:30 (CET), with dstOverlap last', () => {
      const recurrence = compile({ cron: '30 2 * * *', timeZone: 'Europe/Paris', dstOverlap: 'last' });
      expect(between(recurrence, '2026-10-23T12:00:00Z', '2026-10-26T12:00:00Z')).toEqual([
        '2026-10-24T00:30:00.000Z',
        '2026-10-25T01:30:00.000Z', // 02:30 CET
        '2026-10-26T01:30:00.000Z',
      ]);
      // Asked from between the two 02:30s (a node that fired nothing at the first one): still the second.
      expect(iso(recurrence.after(at('2026-10-25T00:30:00Z')))).toBe('2026-10-25T01:30:00.000Z');
    });

    it('with dstOverlap first, asked from between the two 02:30s, does not fire again that day', () => {
      expect(iso(compile({ cron: '30 2 * * *', timeZone: 'Europe/Paris' }).after(at('2026-10-25T00:30:00Z')))).toBe('2026-10-26T01:30:00.000Z');
    });
  });

  describe('Australia/Lord_Howe (DST is 30 minutes)', () => {
    it('02:15 on 2026-10-04 (02:00 → 02:30) fires at 02:30, or not at all with skip', () => {
      const window = ['2026-10-02T12:00:00Z', '2026-10-05T12:00:00Z'] as const;
      expect(between(compile({ cron: '15 2 * * *', timeZone: 'Australia/Lord_Howe' }), ...window)).toEqual([
        '2026-10-02T15:45:00.000Z', // 10-03 02:15 +10:30
        '2026-10-03T15:30:00.000Z', // 10-04 02:30 +11
        '2026-10-04T15:15:00.000Z', // 10-05 02:15 +11
      ]);
      expect(between(compile({ cron: '15 2 * * *', timeZone: 'Australia/Lord_Howe', dstGap: 'skip' }), ...window)).toEqual([
        '2026-10-02T15:45:00.000Z',
        '2026-10-04T15:15:00.000Z',
      ]);
    });

    it('01:45 on 2026-04-05 (02:00 → 01:30) fires once: at +11 (first) or +10:30 (last)', () => {
      const window = ['2026-04-03T12:00:00Z', '2026-04-05T12:00:00Z'] as const;
      expect(between(compile({ cron: '45 1 * * *', timeZone: 'Australia/Lord_Howe' }), ...window)).toEqual([
        '2026-04-03T14:45:00.000Z',
        '2026-04-04T14:45:00.000Z',
      ]);
      expect(between(compile({ cron: '45 1 * * *', timeZone: 'Australia/Lord_Howe', dstOverlap: 'last' }), ...window)).toEqual([
        '2026-04-03T14:45:00.000Z',
        '2026-04-04T15:15:00.000Z',
      ]);
    });

    it('every 15 minutes follows the wall clock: skips 02:00-02:15 at spring forward, fires twice for 01:30-01:45 at fall back', () => {
      const recurrence = compile({ cron: '*/15 * * * *', timeZone: 'Australia/Lord_Howe' });
      expect(between(recurrence, '2026-10-03T15:00:00Z', '2026-10-03T16:00:00Z')).toEqual([
        '2026-10-03T15:15:00.000Z', // 01:45 +10:30
        '2026-10-03T15:30:00.000Z', // 02:30 +11 (02:00 and 02:15 do not exist)
        '2026-10-03T15:45:00.000Z',
        '2026-10-03T16:00:00.000Z',
      ]);
      expect(between(recurrence, '2026-04-04T14:00:00Z', '2026-04-04T15:30:00Z')).toEqual([
        '2026-04-04T14:15:00.000Z', // 01:15 +11
        '2026-04-04T14:30:00.000Z', // 01:30 +11
        '2026-04-04T14:45:00.000Z', // 01:45 +11
        '2026-04-04T15:00:00.000Z', // 01:30 +10:30
        '2026-04-04T15:15:00.000Z', // 01:45 +10:30
        '2026-04-04T15:30:00.000Z', // 02:00 +10:30
      ]);
    });
  });

  describe('America/Santiago (changes at midnight)', () => {
    it("'0 0 * * *' fires at 01:00 on 2026-09-06, the day local midnight does not exist", () => {
      expect(between(compile({ cron: '0 0 * * *', timeZone: 'America/Santiago' }), '2026-09-04T12:00:00Z', '2026-09-07T12:00:00Z')).toEqual([
        '2026-09-05T04:00:00.000Z', // 09-05 00:00 -04
        '2026-09-06T04:00:00.000Z', // 09-06 01:00 -03
        '2026-09-07T03:00:00.000Z', // 09-07 00:00 -03
      ]);
      expect(between(compile({ cron: '0 0 * * *', timeZone: 'America/Santiago', dstGap: 'skip' }), '2026-09-04T12:00:00Z', '2026-09-07T12:00:00Z')).toEqual([
        '2026-09-05T04:00:00.000Z',
        '2026-09-07T03:00:00.000Z',
      ]);
    });

    it("'0 0 * * *' fires once on 2026-04-05, after the clock went from 24:00 back to 23:00", () => {
      expect(between(compile({ cron: '0 0 * * *', timeZone: 'America/Santiago' }), '2026-04-03T12:00:00Z', '2026-04-06T12:00:00Z')).toEqual([
        '2026-04-04T03:00:00.000Z', // 04-04 00:00 -03
        '2026-04-05T04:00:00.000Z', // 04-05 00:00 -04
        '2026-04-06T04:00:00.000Z',
      ]);
    });
  });

  describe('Pacific/Apia skipped 2011-12-30 (from -10 to +14)', () => {
    it.each(['30 2 * * *', '0 0 * * *', '59 23 * * *'])('%s has no occurrence on 2011-12-30; the next is on 2011-12-31', (cron) => {
      const recurrence = compile({ cron, timeZone: 'Pacific/Apia' });
      const dates = between(recurrence, '2011-12-26T12:00:00Z', '2012-01-02T12:00:00Z')
        .map((instant) => new Date(instant).toLocaleDateString('en-CA', { timeZone: 'Pacific/Apia' }))
        .filter((date) => date >= '2011-12-28' && date <= '2012-01-01');
      expect(dates).toEqual(['2011-12-28', '2011-12-29', '2011-12-31', '2012-01-01']);
    });

    it("'30 2 * * *' after the 29th's occurrence is 2011-12-31 02:30 +14", () => {
      expect(iso(compile({ cron: '30 2 * * *', timeZone: 'Pacific/Apia' }).after(at('2011-12-29T12:30:00Z')))).toBe('2011-12-30T12:30:00.000Z');
    });
  });

  it('hourly follows real hours in the overlap: 02:00 CEST and 02:00 CET both fire, and none at spring forward', () => {
    const recurrence = compile({ cron: '0 * * * *', timeZone: 'Europe/Paris' });
    expect(between(recurrence, '2026-10-24T23:30:00Z', '2026-10-25T02:00:00Z')).toEqual([
      '2026-10-25T00:00:00.000Z', // 02:00 CEST
      '2026-10-25T01:00:00.000Z', // 02:00 CET
      '2026-10-25T02:00:00.000Z', // 03:00 CET
    ]);
    expect(between(recurrence, '2026-03-28T23:30:00Z', '2026-03-29T02:00:00Z')).toEqual([
      '2026-03-29T00:00:00.000Z', // 01:00 CET
      '2026-03-29T01:00:00.000Z', // 03:00 CEST
      '2026-03-29T02:00:00.000Z',
    ]);
  });

  it('a list of fixed times is fixed-time: each time once per date, and two times in one gap fire once', () => {
    const recurrence = compile({ cron: '0,30 2 * * *', timeZone: 'Europe/Paris' });
    expect(between(recurrence, '2026-03-28T12:00:00Z', '2026-03-29T12:00:00Z')).toEqual(['2026-03-29T01:00:00.000Z']);
    expect(between(recurrence, '2026-10-24T12:00:00Z', '2026-10-25T12:00:00Z')).toEqual(['2026-10-25T00:00:00.000Z', '2026-10-25T00:30:00.000Z']);
  });

  it('a 6-field expression fires on seconds', () => {
    expect(between(compile({ cron: '*/20 * * * * *' }), '2026-01-01T00:00:00Z', '2026-01-01T00:01:00Z')).toEqual([
      '2026-01-01T00:00:20.000Z',
      '2026-01-01T00:00:40.000Z',
      '2026-01-01T00:01:00.000Z',
    ]);
  });

  it('L, W and # and names are understood', () => {
    expect(iso(compile({ cron: '0 12 L * *' }).after(at('2026-02-01T00:00:00Z')))).toBe('2026-02-28T12:00:00.000Z');
    expect(iso(compile({ cron: '0 12 15W * *' }).after(at('2026-08-01T00:00:00Z')))).toBe('2026-08-14T12:00:00.000Z'); // the 15th is a Saturday
    expect(iso(compile({ cron: '0 12 * * FRI#2' }).after(at('2026-05-01T00:00:00Z')))).toBe('2026-05-08T12:00:00.000Z');
    expect(iso(compile({ cron: '0 9 * JAN MON-FRI' }).after(at('2026-01-03T00:00:00Z')))).toBe('2026-01-05T09:00:00.000Z');
  });

  it('defaults to UTC, whatever the machine zone (a fleet agrees)', () => {
    const before = process.env.TZ;
    try {
      process.env.TZ = 'Pacific/Kiritimati';
      const recurrence = compile({ cron: '30 2 * * *' });
      expect(iso(recurrence.after(at('2026-03-29T00:00:00Z')))).toBe('2026-03-29T02:30:00.000Z');
      expect(iso(compile({ cron: '30 2 * * *', timeZone: 'Europe/Paris' }).after(at('2026-03-29T00:00:00Z')))).toBe('2026-03-29T01:00:00.000Z');
    } finally {
      if (before === undefined) delete process.env.TZ;
      else process.env.TZ = before;
    }
  });

  it('results strictly increase, even for an instant with a fraction of a millisecond or far in the past', () => {
    const recurrence = compile({ cron: '* * * * * *' });
    expect(recurrence.after(1_000.5)).toBe(2_000);
    expect(recurrence.after(1_999.999)).toBe(2_000);
    expect(iso(compile({ cron: '0 0 1 1 *' }).after(-1e15))).toBe('0101-01-01T00:00:00.000Z');
  });

  it('null past the year 9999; a RangeError for what is not an instant', () => {
    expect(compile({ cron: '0 0 1 1 *' }).after(at('9999-06-01T00:00:00Z'))).toBeNull();
    expect(() => compile({ cron: '0 0 1 1 *' }).after(Number.NaN)).toThrow(RangeError);
  });

  it('gives the normalized spec, defaults filled in', () => {
    expect(compileRecurrence({ cron: ' @daily ', timeZone: 'Asia/Kolkata' }).spec).toEqual({
      kind: 'cron',
      cron: '@daily',
      timeZone: 'Asia/Kolkata',
      dstGap: 'shift',
      dstOverlap: 'first',
      fixedTime: true,
    });
    expect(compileRecurrence({ cron: '*/5 * * * *' }).spec).toMatchObject({ timeZone: 'UTC', fixedTime: false });
    expect(compileRecurrence({ every: '1h30m', anchor: new Date('2026-01-01T00:00:00Z') }).spec).toEqual({
      kind: 'interval',
      everyMs: 5_400_000,
      anchorMs: at('2026-01-01T00:00:00Z'),
    });
  });
});

describe('compileRecurrence: intervals', () => {
  it('fires at anchor + n × every, from the epoch by default', () => {
    const recurrence = compile({ every: '15m' });
    expect(iso(recurrence.after(at('2026-03-29T00:07:00Z')))).toBe('2026-03-29T00:15:00.000Z');
    expect(iso(recurrence.after(at('2026-03-29T00:15:00Z')))).toBe('2026-03-29T00:30:00.000Z');
    expect(compile({ every: 1000 }).after(0)).toBe(1000);
  });

  it('is unaffected by DST: 24h stays 24 hours of elapsed time across a change', () => {
    const recurrence = compile({ every: '24h', anchor: at('2026-03-28T01:30:00Z') });
    expect(between(recurrence, '2026-03-28T00:00:00Z', '2026-03-30T12:00:00Z')).toEqual([
      '2026-03-28T01:30:00.000Z',
      '2026-03-29T01:30:00.000Z',
      '2026-03-30T01:30:00.000Z',
    ]);
  });

  it('the anchor is the first occurrence: nothing before it', () => {
    const recurrence = compile({ every: '1h', anchor: new Date('2026-06-01T10:20:00Z') });
    expect(iso(recurrence.after(at('2026-01-01T00:00:00Z')))).toBe('2026-06-01T10:20:00.000Z');
    expect(iso(recurrence.after(at('2026-06-01T10:20:00Z')))).toBe('2026-06-01T11:20:00.000Z');
    expect(recurrence.after(at('2026-06-01T10:20:00Z') + 0.5)).toBe(at('2026-06-01T11:20:00Z'));
  });
});

describe('compileRecurrence: bad input is refused with a typed error', () => {
  function thrown(spec: unknown, options?: CompileRecurrenceOptions): DelayError {
    try {
      compileRecurrence(spec as RecurrenceSpec, options);
    } catch (error) {
      expect(error).toBeInstanceOf(DelayError);
      return error as DelayError;
    }
    throw new Error(`compileRecurrence accepted ${JSON.stringify(spec)}`);
  }

  it.each([
    ['x', /Invalid cron expression "x": .*5 fields/],
    ['61 * * * *', /"61 \* \* \* \*": Invalid value for minute: 61/],
    ['* * * * * * *', /7 parts/],
    ['0 0 30 2 *', /matches no date at all/],
    ['@reboot', /@reboot is not supported/],
    ['*/0 * * * *', /illegal stepping: 0/],
    ['', /empty/],
    [42, /42: expected a string/],
  ])('cron %p → InvalidCronExpressionError', (cron, message) => {
    const error = thrown({ cron });
    expect(error).toBeInstanceOf(InvalidCronExpressionError);
    expect(error.code).toBe('ERR_DELAY_INVALID_CRON_EXPRESSION');
    expect(error.message).toMatch(message);
    expect((error as InvalidCronExpressionError).expression).toBe(cron);
  });

  it('echoes a long expression cut short', () => {
    const cron = `0 0 * * * ${'9'.repeat(300)}`;
    const error = thrown({ cron });
    expect(error).toBeInstanceOf(InvalidCronExpressionError);
    expect(error.message.length).toBeLessThan(300);
    expect(error.message).toContain('... (310 characters)');
  });

  it.each(['Mars/Base', 'Europe/Pariss', '', 7])('time zone %p → UnknownTimeZoneError', (timeZone) => {
    const error = thrown({ cron: '0 0 * * *', timeZone });
    expect(error).toBeInstanceOf(UnknownTimeZoneError);
    expect(error.code).toBe('ERR_DELAY_UNKNOWN_TIME_ZONE');
    expect(error.message).toMatch(/Unknown time zone .*expected an IANA name such as "Europe\/Paris"/);
  });

  it.each([
    [{ every: 0 }, /every must be more than zero, got 0/],
    [{ every: '0s' }, /every must be more than zero, got "0s"/],
    [{ every: -5 }, /every: Invalid duration -5: negative/],
    [{ every: '15' }, /every: .*a number without a unit/],
    [{ every: 'soon' }, /every: Invalid duration "soon"/],
    [{ every: '1s', anchor: new Date(Number.NaN) }, /anchor must be a valid Date/],
    [{ every: '1s', anchor: 1.5 }, /anchor must be/],
    [{ cron: '0 0 * * *', every: '1h' }, /either cron .* or every .*, not both/],
    [{}, /give cron .* or every/],
    [null, /expected \{ cron, timeZone\?, dstGap\?, dstOverlap\? \} or \{ every, anchor\? \}, got null/],
    [{ cron: '0 0 * * *', timezone: 'Europe/Paris' }, /unknown field "timezone" \(did you mean "timeZone"\?\) for a cron recurrence/],
    [{ every: '1h', timeZone: 'Europe/Paris' }, /unknown field "timeZone" for an interval recurrence; allowed: every, anchor/],
    [{ cron: '0 0 * * *', dstGap: 'later' }, /dstGap must be 'shift' or 'skip', got "later"/],
    [{ cron: '0 0 * * *', dstOverlap: 'both' }, /dstOverlap must be 'first' or 'last', got "both"/],
    [{ cron: '0 * * * *', dstGap: 'skip' }, /apply to fixed-time schedules only .*"0 \* \* \* \*" follows the wall clock/],
    [{ cron: '*/5 2 * * *', dstOverlap: 'last' }, /apply to fixed-time schedules only/],
  ])('%p → InvalidRecurrenceError', (spec, message) => {
    const error = thrown(spec);
    expect(error).toBeInstanceOf(InvalidRecurrenceError);
    expect(error.code).toBe('ERR_DELAY_INVALID_RECURRENCE');
    expect(error.message).toMatch(message);
  });

  it('refuses an interval or a cron spacing below minIntervalMs, and accepts what is at or above it', () => {
    expect(thrown({ every: '50ms' }, { minIntervalMs: 100 }).message).toBe('Invalid recurrence: every "50ms" (50 ms) is below the minimum of 100 ms');
    expect(compile({ every: '100ms' }, { minIntervalMs: 100 }).after(0)).toBe(100);
    expect(thrown({ cron: '*/10 * * * * *' }, { minIntervalMs: 60_000 }).message).toBe(
      'Invalid recurrence: cron "*/10 * * * * *" can fire 10000 ms apart, below the minimum of 60000 ms',
    );
    expect(thrown({ cron: '0 0,1 * * *' }, { minIntervalMs: 2 * 3_600_000 }).message).toMatch(/can fire 3600000 ms apart/);
    expect(compile({ cron: '0 * * * *' }, { minIntervalMs: 60_000 }).after(0)).toBe(3_600_000);
    expect(compile({ cron: '0 23,1 * * *' }, { minIntervalMs: 2 * 3_600_000 }).after(0)).toBe(3_600_000);
    expect(thrown({ every: '1s' }, { minIntervalMs: -1 }).message).toMatch(/minIntervalMs must be a finite number/);
  });
});
