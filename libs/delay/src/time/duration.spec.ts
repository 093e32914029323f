import { InvalidDurationError, parseDuration } from 'nestjs-delay';

describe('parseDuration', () => {
  it.each([
    ['30s', 30_000],
    ['30m', 1_800_000],
    ['48h', 172_800_000],
    ['7d', 604_800_000],
    ['1h30m', 5_400_000],
    ['1h 30m', 5_400_000],
    ['250ms', 250],
    ['2w', 1_209_600_000],
    ['1y', 31_536_000_000],
    ['1.5d', 129_600_000],
    [' 45s ', 45_000],
  ])('parses %j to %d ms', (text, expected) => {
    expect(parseDuration(text)).toBe(expected);
  });

  it('takes numbers as milliseconds, rounding a fraction up so an action is never early', () => {
    expect(parseDuration(0)).toBe(0);
    expect(parseDuration(1_500)).toBe(1_500);
    expect(parseDuration(2 ** 31 + 10)).toBe(2 ** 31 + 10);
    expect(parseDuration(0.2)).toBe(1);
    expect(parseDuration('0.2ms')).toBe(1);
  });

  it.each([
    ['a negative number', -1],
    ['a negative string', '-5s'],
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['an unparseable word', 'soon'],
    ['a unit alone', 'h'],
    ['an unknown unit', '5x'],
    ['an upper-case unit', '5S'],
    ['trailing garbage', '30s later'],
    ['an empty string', ''],
    ['blanks only', '   '],
    ['a number without a unit', '30'],
    ['a fraction without a unit', '1.5'],
    ['a number too large for a double', '9'.repeat(400)],
    ['a part too large for a double', `${'9'.repeat(400)}ms`],
    ['null', null],
    ['undefined', undefined],
    ['an object', { seconds: 30 }],
    ['a boolean', true],
  ])('rejects %s with InvalidDurationError', (_label, value) => {
    let thrown: unknown;
    try {
      parseDuration(value);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidDurationError);
    expect(thrown).toMatchObject({ code: 'ERR_DELAY_INVALID_DURATION', value });
  });

  it('names the units to add when a string has none', () => {
    expect(() => parseDuration('30')).toThrow('Invalid duration "30": a number without a unit: write "30ms" or "30s" (or pass the number 30 for milliseconds)');
  });
});
