/**
 * Finds where RESP values end in a byte stream, so the fault proxy can tell
 * commands and replies apart without understanding them. It reads RESP2 and
 * the RESP3 types a client may be answered with.
 */

/** One complete value: its bytes end at `end`; `words` holds a command's parts (an array of bulk strings). */
export interface RespValue {
  readonly end: number;
  readonly words?: string[];
}

const CRLF = 0x0d;

function lineEnd(buffer: Buffer, from: number): number {
  for (let at = from; at + 1 < buffer.length; at++) {
    if (buffer[at] === CRLF && buffer[at + 1] === 0x0a) return at;
  }
  return -1;
}

/**
 * Reads one value from `offset`; undefined while it is incomplete. Throws on
 * bytes that are not RESP, which the proxy then forwards untouched.
 */
export function readResp(buffer: Buffer, offset: number, keepWords = false): RespValue | undefined {
  if (offset >= buffer.length) return undefined;
  const type = String.fromCharCode(buffer[offset]);
  const eol = lineEnd(buffer, offset + 1);
  if (eol < 0) return undefined;
  const header = buffer.toString('latin1', offset + 1, eol);
  const afterHeader = eol + 2;
  switch (type) {
    case '+':
    case '-':
    case ':':
    case '_':
    case '#':
    case ',':
    case '(':
      return { end: afterHeader };
    case '$':
    case '!':
    case '=': {
      const length = Number(header);
      if (!Number.isInteger(length)) throw new Error(`not RESP: bulk length ${header}`);
      if (length < 0) return { end: afterHeader };
      const end = afterHeader + length + 2;
      return end <= buffer.length ? { end } : undefined;
    }
    case '*':
    case '~':
    case '>':
    case '%':
    case '|': {
      const count = Number(header);
      if (!Number.isInteger(count)) throw new Error(`not RESP: aggregate length ${header}`);
      const items = type === '%' || type === '|' ? count * 2 : Math.max(0, count);
      const words: string[] = [];
      let at = afterHeader;
      for (let n = 0; n < items; n++) {
        const item = readResp(buffer, at);
        if (!item) return undefined;
        if (keepWords && buffer[at] === 0x24) {
          const itemEol = lineEnd(buffer, at + 1);
          words.push(buffer.toString('utf8', itemEol + 2, item.end - 2));
        }
        at = item.end;
      }
      // An attribute is followed by the value it describes.
      if (type === '|') return readResp(buffer, at, keepWords);
      return { end: at, words: keepWords ? words : undefined };
    }
    default:
      throw new Error(`not RESP: type byte ${JSON.stringify(type)}`);
  }
}
