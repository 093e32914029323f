import { UnsupportedTransactionClientError } from '../errors/unsupported-transaction-client.error';

/** A statement as knex's `raw(sql, bindings)` takes it. */
export interface KnexRawStatement {
  readonly sql: string;
  readonly bindings: unknown[];
}

/**
 * Rewrites a statement with PostgreSQL's `$1, $2, ...` placeholders into
 * knex's positional `?` form, and orders the bindings to match.
 *
 * Knex reads every `?` in the text as a binding (and `??` as an
 * identifier), inside quotes too, since it does not parse SQL. So:
 * - each `$n` in code (not in a string, a quoted identifier, a comment or
 *   a dollar-quoted body) becomes `?`, binding `params[n - 1]`; a
 *   placeholder used twice binds its value twice;
 * - every `?` of the statement itself (a JSON operator, a question mark in
 *   a string) is escaped as `\?`, which knex turns back into `?`;
 * - a backslash right before a `?` cannot be expressed (knex would read the
 *   pair as an escape and drop the backslash): such a statement is refused.
 * A placeholder without a parameter, or a parameter no placeholder uses, is
 * refused too, as PostgreSQL would.
 */
export function toKnexPlaceholders(sql: string, params: readonly unknown[]): KnexRawStatement {
  const bindings: unknown[] = [];
  const used = new Array<boolean>(params.length).fill(false);
  let out = '';
  let i = 0;
  /** Copies sql[i, end) as text that is not code: only its question marks are escaped. */
  const copyText = (end: number): void => {
    for (let j = i; j < end; j++) {
      const c = sql[j];
      if (c === '?') {
        if (sql[j - 1] === '\\') throw new UnsupportedTransactionClientError('knex', 'knex cannot pass a backslash followed by "?" in a statement\'s text');
        out += '\\?';
      } else {
        out += c;
      }
    }
    i = end;
  };
  while (i < sql.length) {
    const c = sql[i];
    const next = sql[i + 1];
    if (c === "'") copyText(endOfString(sql, i, isEscapeString(sql, i)));
    else if (c === '"') copyText(endOfQuoted(sql, i, '"'));
    else if (c === '-' && next === '-') copyText(endOfLineComment(sql, i));
    else if (c === '/' && next === '*') copyText(endOfBlockComment(sql, i));
    else if (c === '$' && !isIdentifierChar(sql[i - 1])) {
      const placeholder = /^\$(\d+)/.exec(sql.slice(i, i + 12));
      const tag = placeholder ? null : /^\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/.exec(sql.slice(i, i + 64));
      if (placeholder) {
        const n = Number(placeholder[1]);
        if (n < 1 || n > params.length) throw new RangeError(`The statement uses $${n}, but ${params.length} parameter(s) were given`);
        used[n - 1] = true;
        bindings.push(params[n - 1] === undefined ? null : params[n - 1]);
        out += '?';
        i += placeholder[0].length;
      } else if (tag) {
        copyText(endOfDollarQuoted(sql, i, tag[0]));
      } else {
        copyText(i + 1);
      }
    } else {
      copyText(i + 1);
    }
  }
  const unused = used.indexOf(false);
  if (unused !== -1) throw new RangeError(`Parameter $${unused + 1} of ${params.length} is not used by the statement`);
  return { sql: out, bindings };
}

function isIdentifierChar(c: string | undefined): boolean {
  return c !== undefined && /[A-Za-z0-9_$\u0080-\uffff]/.test(c);
}

/** E'...' (or e'...'): a string in which a backslash escapes the next character. */
function isEscapeString(sql: string, quote: number): boolean {
  const before = sql[quote - 1];
  return (before === 'E' || before === 'e') && !isIdentifierChar(sql[quote - 2]);
}

/** Index after the string opened at `start`: '' is a quote inside it; in an E-string a backslash escapes too. */
function endOfString(sql: string, start: number, backslashEscapes: boolean): number {
  for (let j = start + 1; j < sql.length; j++) {
    if (backslashEscapes && sql[j] === '\\') {
      if (sql[j + 1] === '?') return j + 1; // let copyText see and refuse the pair
      j++;
    } else if (sql[j] === "'") {
      if (sql[j + 1] === "'") j++;
      else return j + 1;
    }
  }
  return sql.length;
}

function endOfQuoted(sql: string, start: number, quote: string): number {
  for (let j = start + 1; j < sql.length; j++) {
    if (sql[j] === quote) {
      if (sql[j + 1] === quote) j++;
      else return j + 1;
    }
  }
  return sql.length;
}

function endOfLineComment(sql: string, start: number): number {
  const end = sql.indexOf('\n', start);
  return end === -1 ? sql.length : end + 1;
}

/** PostgreSQL's block comments nest. */
function endOfBlockComment(sql: string, start: number): number {
  let depth = 0;
  for (let j = start; j < sql.length - 1; j++) {
    if (sql[j] === '/' && sql[j + 1] === '*') {
      depth++;
      j++;
    } else if (sql[j] === '*' && sql[j + 1] === '/') {
      depth--;
      j++;
      if (depth === 0) return j + 1;
    }
  }
  return sql.length;
}

function endOfDollarQuoted(sql: string, start: number, tag: string): number {
  const end = sql.indexOf(tag, start + tag.length);
  return end === -1 ? sql.length : end + tag.length;
}
