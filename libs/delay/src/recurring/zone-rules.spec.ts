import { ZoneRules } from './zone-rules';

const wall = (iso: string): number => Date.parse(`${iso}Z`); // a local date and time written as if UTC
const at = (iso: string): number => Date.parse(iso);

describe('ZoneRules', () => {
  const paris = new ZoneRules('Europe/Paris');

  it('reads offsets, including ones with seconds', () => {
    expect(paris.offsetAt(at('2026-01-15T12:00:00Z'))).toBe(3_600_000);
    expect(paris.offsetAt(at('2026-07-15T12:00:00Z'))).toBe(7_200_000);
    expect(new ZoneRules('UTC').offsetAt(0)).toBe(0);
    expect(new ZoneRules('Asia/Kathmandu').offsetAt(at('2026-01-01T00:00:00Z'))).toBe(20_700_000); // +05:45
    expect(new ZoneRules('Africa/Monrovia').offsetAt(at('1960-01-01T00:00:00Z'))).toBe(-2_670_000); // -00:44:30
    expect(new ZoneRules('America/St_Johns').offsetAt(at('2026-01-01T00:00:00Z'))).toBe(-12_600_000); // -03:30
  });

  it('resolves a wall time that happens once, twice or never', () => {
    expect(paris.resolve(wall('2026-06-01T12:00:00'))).toEqual({ kind: 'single', instant: at('2026-06-01T10:00:00Z') });
    expect(paris.resolve(wall('2026-10-25T02:30:00'))).toEqual({
      kind: 'overlap',
      earlier: at('2026-10-25T00:30:00Z'),
      later: at('2026-10-25T01:30:00Z'),
    });
    expect(paris.resolve(wall('2026-03-29T02:30:00'))).toEqual({ kind: 'gap', transition: at('2026-03-29T01:00:00Z') });
    expect(new ZoneRules('Pacific/Apia').resolve(wall('2011-12-30T12:00:00'))).toEqual({ kind: 'gap', transition: at('2011-12-30T10:00:00Z') });
  });

  it('finds the instant the offset changes, and finds it again from what it remembered', () => {
    expect(paris.transitionBetween(at('2026-03-28T00:00:00Z'), at('2026-03-30T00:00:00Z'))).toBe(at('2026-03-29T01:00:00Z'));
    expect(paris.transitionBetween(at('2026-03-29T00:59:59Z'), at('2026-03-29T01:00:00Z'))).toBe(at('2026-03-29T01:00:00Z'));
    expect(paris.transitionBetween(at('2026-03-28T00:00:00Z'), at('2026-03-30T00:00:00Z'))).toBe(at('2026-03-29T01:00:00Z'));
    expect(paris.transitionBetween(at('2026-05-01T00:00:00Z'), at('2026-05-03T00:00:00Z'))).toBe(at('2026-05-03T00:00:00Z'));
  });

  it('throws RangeError for a zone the runtime does not know', () => {
    expect(() => new ZoneRules('Mars/Olympus_Mons')).toThrow(RangeError);
  });
});

describe('ZoneRules.offsetFromFields (the fallback)', () => {
  it('agrees with offsetAt across zones and centuries', () => {
    const differences: string[] = [];
    for (const timeZone of ['Europe/Paris', 'Africa/Monrovia', 'Asia/Kathmandu', 'Pacific/Apia', 'America/St_Johns', 'UTC', 'Australia/Lord_Howe']) {
      const zone = new ZoneRules(timeZone);
      for (let instant = Date.UTC(1850, 0, 1, 0, 0, 0, 0); instant < Date.UTC(2100, 0, 1); instant += 86_400_000 * 97 + 3_600_000 * 7 + 1234) {
        if (zone.offsetFromFields(instant) !== zone.offsetAt(instant)) differences.push(`${timeZone} ${new Date(instant).toISOString()}`);
      }
      expect(zone.offsetFromFields(Date.UTC(150, 5, 1))).toBe(zone.offsetAt(Date.UTC(150, 5, 1)));
    }
    expect(differences).toEqual([]);
  });
});
