/**
 * Writes parameters into SQL as literals, for statements sent inside the
 * application's transaction without parameters (the simple query
 * protocol). Only the value types the driver itself passes are accepted:
 * strings, finite numbers, booleans, null, and arrays of those.
 */
export function inlineParameters(sql: string, params: readonly unknown[]): string {
  return sql.replace(/\$(\d+)/g, (_, index: string) => literal(params[Number(index) - 1]));
}

function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`nestjs-delay: cannot write ${value} into SQL`);
    // In parentheses: a negative number after a minus sign would otherwise start a comment (--).
    return value < 0 ? `(${value})` : String(value);
  }
  if (typeof value === 'string') return stringLiteral(value);
  if (Array.isArray(value)) return `ARRAY[${value.map(literal).join(',')}]`;
  throw new TypeError(`nestjs-delay: cannot write a ${typeof value} into SQL`);
}

/**
 * An E'' string: backslashes and quotes escaped, so it reads the same
 * whatever standard_conforming_strings says; `$` and `?` written as \x24
 * and \x3f, so no client or adapter that rewrites placeholders (`$1` to
 * `?`, `?` bindings) can mistake a value for one.
 */
function stringLiteral(text: string): string {
  return `E'${text.replace(/\\/g, '\\\\').replace(/'/g, "''").replace(/\$/g, '\\x24').replace(/\?/g, '\\x3f')}'`;
}
