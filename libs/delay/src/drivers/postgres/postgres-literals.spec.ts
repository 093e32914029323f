import { inlineParameters } from './postgres-literals';

describe('inlineParameters', () => {
  it('writes each kind of value the driver passes as a literal', () => {
    expect(inlineParameters('SELECT $1::text, $2::bigint, $3::boolean, $4::text, $5::text[], $6::bigint[]', ["it's \\ $2", 42, true, null, ['a', null], [1, 2]])).toBe(
      "SELECT E'it''s \\\\ \\x242'::text, 42::bigint, TRUE::boolean, NULL::text, ARRAY[E'a',NULL]::text[], ARRAY[1,2]::bigint[]",
    );
  });

  it('puts negative numbers in parentheses, so a minus before them cannot start a comment', () => {
    expect(inlineParameters('SELECT 1 -$1', [-5])).toBe('SELECT 1 -(-5)');
  });

  it('does not re-read what it wrote: a value holding $n stays as it is, and $10 is not $1 followed by 0', () => {
    const params = Array.from({ length: 10 }, (_, n) => `v${n + 1}`);
    params[0] = '$2';
    expect(inlineParameters('$1 $10', params)).toBe("E'\\x242' E'v10'");
  });

  it('writes $ and ? inside values as escapes, so no placeholder rewriting can touch them', () => {
    expect(inlineParameters('$1', ['a?b$1'])).toBe("E'a\\x3fb\\x241'");
  });

  it('refuses what it cannot write safely', () => {
    expect(() => inlineParameters('$1', [Number.NaN])).toThrow(TypeError);
    expect(() => inlineParameters('$1', [{}])).toThrow(TypeError);
  });
});
