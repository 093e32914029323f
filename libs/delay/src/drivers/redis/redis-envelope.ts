import { StoredAction, StoredDeadAction } from '../../interfaces/delay-driver.interface';

/** Separates a closed batch's key from its token in its member name (the scripts' "\31"). */
const BATCH_ID_SEPARATOR = '\u001f';

/** The user's key of a member: a closed batch is filed under key + separator + token. */
export function keyOfMember(member: string): string {
  const at = member.lastIndexOf(BATCH_ID_SEPARATOR);
  return at < 0 ? member : member.slice(0, at);
}

/** A batch's items, stored as netstrings "<bytes>:<json>" back to back. */
export function parseItems(text: string): string[] {
  const buffer = Buffer.from(text, 'utf8');
  const items: string[] = [];
  let at = 0;
  while (at < buffer.length) {
    const colon = buffer.indexOf(0x3a, at);
    const length = Number(buffer.subarray(at, colon).toString('latin1'));
    items.push(buffer.subarray(colon + 1, colon + 1 + length).toString('utf8'));
    at = colon + 1 + length;
  }
  return items;
}

/** How many items a batch holds, from its envelope payload "#count|openedAt". */
function batchSize(payload: string | undefined): number {
  return Number.parseInt((payload ?? '#0').slice(1), 10);
}

/**
 * An action as the scripts store it: "token|attempt|dueAt|payload", token and
 * dueAt in base 36, payload empty for none; for a batch "#count|openedAt",
 * its items stored apart.
 */
export interface Envelope {
  /** The whole token field, trace included: what acks compare. */
  readonly token: string;
  /** The trace context of the request that armed it, carried in the token after a '~'. */
  readonly trace: string | undefined;
  readonly attempt: number;
  readonly dueAt: number;
  readonly payload: string | undefined;
}

export function parseEnvelope(text: string): Envelope {
  const first = text.indexOf('|');
  const second = text.indexOf('|', first + 1);
  const third = text.indexOf('|', second + 1);
  if (first < 0 || second < 0 || third < 0) throw new Error(`Malformed delay envelope: ${text.slice(0, 80)}`);
  const payload = text.slice(third + 1);
  return {
    token: text.slice(0, first),
    trace: traceOfToken(text.slice(0, first)),
    attempt: Number(text.slice(first + 1, second)),
    dueAt: parseInt(text.slice(second + 1, third), 36),
    // Valid JSON is never empty, so '' can stand for "no payload".
    payload: payload === '' ? undefined : payload,
  };
}

function traceOfToken(token: string): string | undefined {
  const at = token.indexOf('~');
  return at < 0 ? undefined : token.slice(at + 1);
}

/** What may ride in a token: a W3C traceparent; anything else is not stored. */
export function storableTrace(trace: string | undefined): string {
  return trace !== undefined && /^[0-9a-f-]{1,128}$/.test(trace) ? trace : '';
}

export function isBatchEnvelope(envelope: Envelope): boolean {
  return envelope.payload !== undefined && envelope.payload.startsWith('#');
}

export function toStoredAction(topic: string, member: string, text: string, running: boolean, items: string, paused = false): StoredAction {
  const envelope = parseEnvelope(text);
  const batch = isBatchEnvelope(envelope);
  return {
    topic,
    key: keyOfMember(member),
    payload: batch ? undefined : envelope.payload,
    items: batch ? parseItems(items) : undefined,
    size: batch ? batchSize(envelope.payload) : undefined,
    dueAt: envelope.dueAt,
    attempt: envelope.attempt,
    state: running ? 'running' : 'waiting',
    paused,
  };
}

/** A dead record: "attempts|dueAt|diedAt|errorLength|" + error + payload. */
export function parseDeadRecord(topic: string, member: string, text: string): StoredDeadAction {
  const parts: number[] = [];
  let at = -1;
  for (let n = 0; n < 4; n++) {
    const next = text.indexOf('|', at + 1);
    if (next < 0) throw new Error(`Malformed dead record: ${text.slice(0, 80)}`);
    parts.push(Number(text.slice(at + 1, next)));
    at = next;
  }
  const [attempts, dueAt, diedAt, errorBytes] = parts;
  // The length is in bytes (Lua strings); slice on a Buffer to honour multi-byte characters.
  const rest = Buffer.from(text.slice(at + 1), 'utf8');
  const payload = rest.subarray(errorBytes).toString('utf8');
  const batch = payload.startsWith('#');
  return {
    id: member,
    topic,
    key: keyOfMember(member),
    attempts,
    dueAt,
    diedAt,
    error: rest.subarray(0, errorBytes).toString('utf8'),
    payload: payload === '' || batch ? undefined : payload,
    items: batch ? parseItems(payload.slice(1)) : undefined,
  };
}
