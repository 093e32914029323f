import { StoredAction, StoredDeadAction } from '../../interfaces/delay-driver.interface';

/** An action as the scripts store it: "token|attempt|dueAt|payload" (payload empty for none). */
export interface Envelope {
  readonly token: string;
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
    attempt: Number(text.slice(first + 1, second)),
    dueAt: Number(text.slice(second + 1, third)),
    // Valid JSON is never empty, so '' can stand for "no payload".
    payload: payload === '' ? undefined : payload,
  };
}

export function toStoredAction(topic: string, key: string, envelope: string, running: boolean): StoredAction {
  const { attempt, dueAt, payload } = parseEnvelope(envelope);
  return { topic, key, payload, dueAt, attempt, state: running ? 'running' : 'waiting' };
}

/** A dead record: "attempts|dueAt|diedAt|errorLength|" + error + payload. */
export function parseDeadRecord(topic: string, key: string, text: string): StoredDeadAction {
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
  return {
    topic,
    key,
    attempts,
    dueAt,
    diedAt,
    error: rest.subarray(0, errorBytes).toString('utf8'),
    payload: payload === '' ? undefined : payload,
  };
}
