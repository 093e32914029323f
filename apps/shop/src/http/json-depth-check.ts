import { IncomingMessage, ServerResponse } from 'node:http';

/** No body the shop takes is nested more than a few levels; 32 leaves room and keeps validation's recursion shallow. */
export const MAX_JSON_DEPTH = 32;

/** What body-parser turns into the response: a 400 with this message. */
export interface BodyRefusal extends Error {
  readonly status: number;
  readonly expose: boolean;
}

/**
 * body-parser's `verify` hook for JSON: refuses a body whose arrays and
 * objects nest deeper than MAX_JSON_DEPTH, before it is parsed. A body of
 * thousands of `[` parses fine but overflows the stack of the validation
 * that walks it, which answered 500; this answers 400 first. Brackets in
 * strings do not count.
 */
export function refuseDeepJson(_request: IncomingMessage, _response: ServerResponse, body: Buffer): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const byte = body[i];
    if (inString) {
      if (byte === 0x5c) i++; // backslash: skip the escaped character
      else if (byte === 0x22) inString = false;
    } else if (byte === 0x22) {
      inString = true;
    } else if (byte === 0x5b || byte === 0x7b) {
      if (++depth > MAX_JSON_DEPTH) throw bodyRefusal(`The JSON body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep.`);
    } else if (byte === 0x5d || byte === 0x7d) {
      depth--;
    }
  }
}

function bodyRefusal(message: string): BodyRefusal {
  return Object.assign(new Error(message), { status: 400, expose: true });
}
