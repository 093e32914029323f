import { decodeSeriesState, encodeSeriesState, SeriesState } from './series-state';

describe('series state codec', () => {
  const cron: SeriesState = {
    v: 1,
    spec: { kind: 'cron', cron: '0 0 1 1 *', timeZone: 'UTC', dstGap: 'shift', dstOverlap: 'first', fixedTime: true },
    missed: { kind: 'once' },
    overlap: 'skip',
    jitterMs: 0,
    payload: '{"userId":"user-0000042","note":"a|b"}',
    last: null,
    reset: true,
    paused: false,
    declared: false,
  };

  it('keeps the defaults out: a typical schedule is a short line', () => {
    const stored = encodeSeriesState(cron);
    expect(stored).toBe('@1|c|0 0 1 1 *|||||||rf|{"userId":"user-0000042","note":"a|b"}');
    expect(decodeSeriesState(stored)).toEqual({ ...cron, orphan: undefined });
  });

  it('round-trips every field away from its default', () => {
    const states: SeriesState[] = [
      { ...cron, spec: { ...cron.spec, timeZone: 'Europe/Paris', dstGap: 'skip', dstOverlap: 'last', fixedTime: false } as SeriesState['spec'], missed: { kind: 'within', withinMs: 90_000 }, overlap: 'cancelPrevious', jitterMs: 30_000, last: 1_790_000_000_000, reset: false, paused: true, declared: true, orphan: 'keep', payload: undefined },
      { ...cron, spec: { kind: 'interval', everyMs: 900_000, anchorMs: 1_700_000_000_123 }, missed: { kind: 'all' }, overlap: 'bufferOne' },
      { ...cron, missed: { kind: 'skip' }, overlap: 'allow', payload: '""' },
      { ...cron, overlap: 'bufferOne', last: 1_790_000_060_000, buffered: 1_790_000_000_000 },
    ];
    for (const state of states) expect(decodeSeriesState(encodeSeriesState(state))).toEqual({ orphan: undefined, ...state });
  });

  it('a held-back instant rides after last: older code reading the field as a number still gets last', () => {
    const stored = encodeSeriesState({ ...cron, overlap: 'bufferOne', last: 1_790_000_060_000, buffered: 1_790_000_000_000 });
    const field = stored.split('|')[8];
    expect(parseInt(field, 36)).toBe(1_790_000_060_000);
  });

  it('reads anything else as no state', () => {
    for (const payload of [undefined, '', '{"v":1}', '#3|12', '@1|x|', '@1|c|0 0 * * *|', '@1|i|zz|!|||||', '@2|c|0 0 1 1 *||||||||']) expect(decodeSeriesState(payload)).toBeUndefined();
  });
});
