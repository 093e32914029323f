import { UnknownTimeZoneError } from 'nestjs-delay';
import { canonicalTimeZone, localDay, previousLocalDay } from './local-day';

const HOUR = 3_600_000;

function span(date: string, timeZone: string): { from: string; to: string; hours: number } {
  const day = localDay(date, timeZone);
  return { from: day.from.toISOString(), to: day.to.toISOString(), hours: (day.to.getTime() - day.from.getTime()) / HOUR };
}

describe('local days of a merchant zone', () => {
  it('are 24 hours most days, 23 and 25 on the days Paris changes its clocks, and tile time', () => {
    expect(span('2026-06-10', 'Europe/Paris')).toEqual({ from: '2026-06-09T22:00:00.000Z', to: '2026-06-10T22:00:00.000Z', hours: 24 });
    expect(span('2026-03-29', 'Europe/Paris')).toEqual({ from: '2026-03-28T23:00:00.000Z', to: '2026-03-29T22:00:00.000Z', hours: 23 });
    expect(span('2026-10-25', 'Europe/Paris')).toEqual({ from: '2026-10-24T22:00:00.000Z', to: '2026-10-25T23:00:00.000Z', hours: 25 });
    expect(span('2026-10-26', 'Europe/Paris').from).toBe(span('2026-10-25', 'Europe/Paris').to);
  });

  it('start when the clocks jump where midnight does not exist (Santiago, 6 September 2026), and on the right side of the date line', () => {
    // 00:00 -04 becomes 01:00 -03: the day's first instant is the jump.
    expect(span('2026-09-06', 'America/Santiago')).toEqual({ from: '2026-09-06T04:00:00.000Z', to: '2026-09-07T03:00:00.000Z', hours: 23 });
    expect(span('2026-09-05', 'America/Santiago').to).toBe('2026-09-06T04:00:00.000Z');
    expect(span('2026-01-01', 'Pacific/Kiritimati')).toEqual({ from: '2025-12-31T10:00:00.000Z', to: '2026-01-01T10:00:00.000Z', hours: 24 });
    expect(span('2026-01-01', 'Asia/Kolkata').from).toBe('2025-12-31T18:30:00.000Z');
  });

  it("a digest at 09:00 local covers the local day before, in the zone's own calendar", () => {
    expect(previousLocalDay(new Date('2026-10-26T08:00:00Z'), 'Europe/Paris').date).toBe('2026-10-25');
    expect(previousLocalDay(new Date('2026-03-01T09:00:00Z'), 'UTC').date).toBe('2026-02-28');
    // 09:00 in Tokyo on 1 January is still 31 December in UTC: the day is Tokyo's 31 December.
    expect(previousLocalDay(new Date('2026-01-01T00:00:00Z'), 'Asia/Tokyo')).toMatchObject({ date: '2025-12-31', from: new Date('2025-12-30T15:00:00Z') });
  });

  it('zones are checked and written as the runtime names them; an unknown one is the library error', () => {
    expect(canonicalTimeZone('europe/paris')).toBe('Europe/Paris');
    expect(canonicalTimeZone('UTC')).toBe('UTC');
    for (const bad of ['Mars/Olympus_Mons', '', '  ', 'Europe/Paris;DROP']) {
      expect(() => canonicalTimeZone(bad)).toThrow(UnknownTimeZoneError);
    }
  });
});
