import { TickKeys } from './tick-keys';

describe('TickKeys', () => {
  it('pages keys in code point order after a key, the order kept across adds and deletes', () => {
    const keys = new TickKeys();
    // U+1F600 (a surrogate pair in UTF-16) sorts after U+FF5E in code point order, though JS `<` puts it before.
    for (const key of ['b', '\u{1F600}', 'a', '\uFF5E', 'c']) keys.add(key);
    expect(keys.page(null, 10)).toEqual(['a', 'b', 'c', '\uFF5E', '\u{1F600}']);
    expect(keys.page('a', 2)).toEqual(['b', 'c']);
    // A key that is not there: the page starts where it would be.
    expect(keys.page('bb', 10)).toEqual(['c', '\uFF5E', '\u{1F600}']);
    keys.delete('c');
    keys.add('ba');
    keys.add('b');
    expect(keys.size).toBe(5);
    expect(keys.page('b', 10)).toEqual(['ba', '\uFF5E', '\u{1F600}']);
    expect(keys.page('\u{1F600}', 10)).toEqual([]);
  });
});
