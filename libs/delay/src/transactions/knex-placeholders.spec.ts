import { UnsupportedTransactionClientError } from '../errors/unsupported-transaction-client.error';
import { toKnexPlaceholders } from './knex-placeholders';

describe('toKnexPlaceholders', () => {
  it('turns $n into ? and orders the bindings as the placeholders appear', () => {
    expect(toKnexPlaceholders('SELECT $2, $1, $2', ['a', 'b'])).toEqual({ sql: 'SELECT ?, ?, ?', bindings: ['b', 'a', 'b'] });
  });

  it('reads $10 as the tenth parameter, not the first followed by 0', () => {
    const params = Array.from({ length: 10 }, (_, n) => n + 1);
    const sql = `SELECT ${params.map((n) => `$${n}`).reverse().join(', ')}`;
    expect(toKnexPlaceholders(sql, params)).toEqual({ sql: `SELECT ${params.map(() => '?').join(', ')}`, bindings: [...params].reverse() });
  });

  it('escapes every ? of the statement itself, in code (JSON operators) as in strings', () => {
    expect(toKnexPlaceholders(`SELECT doc ? 'k', doc ?| $1, 'why?' WHERE "a?" = $2`, [['k'], 'x'])).toEqual({
      sql: `SELECT doc \\? 'k', doc \\?| ?, 'why\\?' WHERE "a\\?" = ?`,
      bindings: [['k'], 'x'],
    });
    expect(toKnexPlaceholders('SELECT ?? AS a', [])).toEqual({ sql: 'SELECT \\?\\? AS a', bindings: [] });
  });

  it.each([
    ['a string', `SELECT 'it''s $1' , $1`, `SELECT 'it''s $1' , ?`],
    ['an E-string with an escaped quote', `SELECT E'\\'$1', $1`, `SELECT E'\\'$1', ?`],
    ['a quoted identifier', `SELECT 1 AS "x""$1", $1`, `SELECT 1 AS "x""$1", ?`],
    ['a line comment', `SELECT $1 -- not $1\n`, `SELECT ? -- not $1\n`],
    ['a nested block comment', `SELECT /* $1 /* $1 */ $1 */ $1`, `SELECT /* $1 /* $1 */ $1 */ ?`],
    ['a dollar-quoted body', `SELECT $$ $1 $$, $tag$ $1 $$ $tag$, $1`, `SELECT $$ $1 $$, $tag$ $1 $$ $tag$, ?`],
    ['an identifier containing $', `SELECT a$1, $1`, `SELECT a$1, ?`],
  ])('leaves $n inside %s alone', (_where, sql, expected) => {
    expect(toKnexPlaceholders(sql, ['v'])).toEqual({ sql: expected, bindings: ['v'] });
  });

  it('binds undefined as null, as pg does', () => {
    expect(toKnexPlaceholders('SELECT $1', [undefined]).bindings).toEqual([null]);
  });

  it('refuses a backslash right before a ?, which knex cannot pass through', () => {
    expect(() => toKnexPlaceholders(`SELECT 'a\\?'`, [])).toThrow(UnsupportedTransactionClientError);
    expect(() => toKnexPlaceholders(`SELECT E'a\\?'`, [])).toThrow(/backslash followed by "\?"/);
  });

  it('refuses a placeholder without a parameter, and a parameter no placeholder uses', () => {
    expect(() => toKnexPlaceholders('SELECT $2', ['a'])).toThrow(/uses \$2, but 1 parameter/);
    expect(() => toKnexPlaceholders('SELECT $0', ['a'])).toThrow(RangeError);
    expect(() => toKnexPlaceholders('SELECT $1', ['a', 'b'])).toThrow(/Parameter \$2 of 2 is not used/);
  });

  it('leaves a statement without placeholders or question marks as it is', () => {
    const sql = `SELECT 1 FROM t WHERE a = 'x' AND "b" = $$y$$`;
    expect(toKnexPlaceholders(sql, [])).toEqual({ sql, bindings: [] });
  });
});
