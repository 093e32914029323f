/**
 * Compares strings in code point order, which is UTF-8 byte order: the order
 * Redis (lexicographic ranges) and PostgreSQL (`COLLATE "C"`) keep keys in.
 * JS `<` compares UTF-16 units, which puts code points above U+FFFF before
 * U+E000-U+FFFF.
 */
export function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let n = 0; n < length; n++) {
    const x = a.charCodeAt(n);
    const y = b.charCodeAt(n);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/** Surrogates (D800-DFFF) encode code points above FFFF, so they rank above E000-FFFF. */
function codePointRank(unit: number): number {
  return unit >= 0xe000 ? unit - 0x800 : unit >= 0xd800 ? unit + 0x2000 : unit;
}

/**
 * The positions of `items` in code point order of their keys, a key's items
 * in their own order: a statement that locks the rows of several keys takes
 * them in this order, so two such statements never wait for each other in a
 * cycle.
 */
export function codePointOrder<T>(items: readonly T[], keyOf: (item: T) => string): number[] {
  return items.map((_, n) => n).sort((a, b) => compareCodePoints(keyOf(items[a]), keyOf(items[b])) || a - b);
}

/** Results given in `order` (from codePointOrder) put back in the items' own order. */
export function inItemOrder<R>(order: readonly number[], results: readonly R[]): R[] {
  const back = new Array<R>(order.length);
  order.forEach((item, at) => {
    back[item] = results[at];
  });
  return back;
}
