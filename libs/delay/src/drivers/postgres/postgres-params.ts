import { AdvanceSeriesCommand, DueSpec } from '../../interfaces/delay-driver.interface';

// The driver's values as the parameters of its statements (the rows that come back: postgres-rows.ts).

/** 'at' times may carry a fraction of a ms: stored whole, never early. */
export function dueParams(due: DueSpec): [boolean, number] {
  return 'delayMs' in due ? [false, Math.ceil(due.delayMs)] : [true, Math.floor(due.atMs)];
}

/** advance_series's condition: its kind ('token', 'payload', 'absent') and value. */
export function expectParams(expect: AdvanceSeriesCommand['expect']): [string, string | null] {
  return 'token' in expect ? ['token', expect.token] : 'payload' in expect ? ['payload', expect.payload] : ['absent', null];
}

/** advance_series's tick after the step: its kind ('remove', 'keep', 'delay', 'at'), due value and payload. */
export function nextParams(next: AdvanceSeriesCommand['next']): [string, number, string | null] {
  return next === null ? ['remove', 0, null] : next === undefined ? ['keep', 0, null] : ['delayMs' in next.due ? 'delay' : 'at', dueParams(next.due)[1], next.payload];
}

/** bufferOne's step while a previous occurrence is alive: next ('delay', 'at', null for none), its ms, its payload, the keys then skipped. */
export function whileAliveParams(command: AdvanceSeriesCommand): [string | null, number, string | null, readonly string[]] {
  const { whileAlive } = command;
  if (!whileAlive) return [null, 0, null, []];
  const [, value] = dueParams(whileAlive.next.due);
  return ['delayMs' in whileAlive.next.due ? 'delay' : 'at', value, whileAlive.next.payload, whileAlive.skipped];
}

/** An occurrence's payload as stored: null for none. */
export function occurrencePayload(occurrence: AdvanceSeriesCommand['occurrences'][number]): string | null {
  return occurrence.payload === undefined || occurrence.payload === '' ? null : occurrence.payload;
}

/** PostgreSQL text cannot hold U+0000: such a key can have no action. */
export function hasNul(key: string): boolean {
  return key.includes('\u0000');
}
