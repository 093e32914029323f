import { Delivery, StoredAction, StoredDeadAction } from '../../interfaces/delay-driver.interface';
import { Row } from './postgres-connection';
import { compareCodePoints } from '../../utils/code-point-order';

/** A bigint column (pg hands int8 back as a string) as a number: epoch ms and tokens fit well within 2^53. */
export function int(value: unknown): number {
  return typeof value === 'number' ? value : Number(value);
}

function text(value: unknown): string | undefined {
  return value === null || value === undefined ? undefined : String(value);
}

function items(row: Row): string[] | undefined {
  return row.batch === true ? ((row.items as string[] | null) ?? []) : undefined;
}

export function toStoredAction(topic: string, row: Row): StoredAction {
  const batch = row.batch === true;
  return {
    topic,
    key: String(row.key),
    payload: batch ? undefined : text(row.payload),
    items: items(row),
    size: batch && row.size !== undefined && row.size !== null ? int(row.size) : undefined,
    dueAt: int(row.due_at),
    attempt: int(row.attempt),
    state: row.state === 'running' ? 'running' : 'waiting',
    paused: row.paused === true,
  };
}

export function toDeadAction(topic: string, row: Row): StoredDeadAction {
  return {
    id: String(row.id),
    topic,
    key: String(row.key),
    payload: row.batch === true ? undefined : text(row.payload),
    items: items(row),
    dueAt: int(row.due_at),
    attempts: int(row.attempts),
    error: String(row.error),
    diedAt: int(row.died_at),
  };
}

/**
 * Claimed rows in the order the claim picked them: by due time, then member. The claim's reply does not keep that
 * order by itself (the batches it re-files come back in the order the server updated them, which is where their rows
 * happen to lie in the table), and a key's closed batches must start in the order they were collected.
 */
export function inDueOrder(rows: Row[]): Row[] {
  // Rows that are not batches come back as they were picked.
  if (!rows.some((row) => row.batch === true)) return rows;
  return rows.sort((a, b) => int(a.due_at) - int(b.due_at) || compareCodePoints(String(a.member), String(b.member)));
}

/** A claimed row as the consumer hands it over; the token travels as text, as on every driver. */
export function toDelivery(topic: string, row: Row, firedAt: number): Delivery {
  return {
    topic,
    key: String(row.key),
    payload: row.batch === true ? undefined : text(row.payload),
    items: items(row),
    dueAt: int(row.due_at),
    firedAt,
    attempt: int(row.attempt),
    token: String(row.token),
    trace: text(row.trace),
  };
}

/** A text[] column as strings. */
export function texts(value: unknown): string[] {
  return Array.isArray(value) ? value.map(String) : [];
}

/** A nullable text column: undefined for NULL. */
export function nullable(value: unknown): string | undefined {
  return value === null || value === undefined ? undefined : String(value);
}
