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
