import { InvalidKeyError } from '../errors/invalid-key.error';
import { InvalidScheduleOptionsError } from '../errors/invalid-schedule-options.error';
import { InvalidTopicError } from '../errors/invalid-topic.error';
import { PayloadNotSerializableError } from '../errors/payload-not-serializable.error';
import { PayloadTooLargeError } from '../errors/payload-too-large.error';
import { DueSpec } from '../interfaces/delay-driver.interface';
import { DueTime, IfExists } from '../interfaces/schedule-options.interface';
import { PageRequest } from '../interfaces/pending-action.interface';
import { parseDuration } from '../time/duration';

export const MAX_TOPIC_LENGTH = 100;
export const MAX_KEY_LENGTH = 512;
export const DEFAULT_PAGE_LIMIT = 100;
export const MAX_PAGE_LIMIT = 1000;

/**
 * Topics become part of Redis key names inside a `{hash tag}`, so they keep
 * to a safe alphabet; keys are opaque and may hold any character.
 */
const TOPIC_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;

export function validateTopic(topic: unknown): string {
  if (typeof topic !== 'string') throw new InvalidTopicError(topic, 'must be a string');
  if (topic.length === 0) throw new InvalidTopicError(topic, 'must not be empty');
  if (topic.length > MAX_TOPIC_LENGTH) throw new InvalidTopicError(topic, `longer than ${MAX_TOPIC_LENGTH} characters`);
  if (!TOPIC_PATTERN.test(topic)) {
    throw new InvalidTopicError(topic, 'use letters, digits and . _ : - only, starting with a letter or digit');
  }
  return topic;
}

/** Half of a surrogate pair on its own: not Unicode, with no UTF-8 form. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function validateKey(key: unknown): string {
  if (typeof key !== 'string') throw new InvalidKeyError(key, `must be a string, got ${typeof key}`);
  if (key.length === 0) throw new InvalidKeyError(key, 'must not be empty');
  if (key.length > MAX_KEY_LENGTH) throw new InvalidKeyError(key, `longer than ${MAX_KEY_LENGTH} characters`);
  // U+001F joins a key and a token in the id of a closed batch (drivers/redis/lua/collect.lua).
  if (key.includes('\u001f')) throw new InvalidKeyError(key, 'contains U+001F, which is reserved for batch ids');
  if (LONE_SURROGATE.test(key)) throw new InvalidKeyError(key, 'contains a lone surrogate, which Redis would store as U+FFFD (two such keys would collide)');
  return key;
}

/** A DeadAction id: a key, or a key plus U+001F and a token for a dead batch. */
export function validateDeadId(id: unknown): string {
  const separator = typeof id === 'string' ? id.lastIndexOf('\u001f') : -1;
  validateKey(typeof id === 'string' && separator >= 0 ? id.slice(0, separator) : id);
  const token = (id as string).slice(separator + 1);
  if (separator >= 0 && !/^\d{1,20}$/.test(token)) throw new InvalidKeyError(id, 'not an id listDead gave');
  return id as string;
}

/** JSON text of the payload (undefined for none), refused when JSON would lose or choke on it. */
export function serializePayload(payload: unknown, maxBytes: number): string | undefined {
  if (payload === undefined) return undefined;
  let json: string | undefined;
  try {
    json = JSON.stringify(payload);
  } catch (error) {
    // BigInt and cycles throw a TypeError whose message says which.
    throw new PayloadNotSerializableError(error instanceof Error ? error.message : String(error));
  }
  if (json === undefined) throw new PayloadNotSerializableError(`a ${typeof payload} has no JSON form`);
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > maxBytes) throw new PayloadTooLargeError(bytes, maxBytes);
  return json;
}

export function parsePayload(json: string | undefined): unknown {
  return json === undefined ? undefined : JSON.parse(json);
}

/** Turns `{ delay }` or `{ at }` into a DueSpec; the driver resolves it on its clock. */
export function toDueSpec(options: Partial<DueTime> | undefined): DueSpec {
  const hasDelay = options?.delay !== undefined;
  const hasAt = options?.at !== undefined;
  if (hasDelay === hasAt) {
    throw new InvalidScheduleOptionsError(hasDelay ? 'give either delay or at, not both' : 'a due time is required: give delay (e.g. "30m") or at (a Date or epoch ms)');
  }
  if (hasDelay) return { delayMs: parseDuration(options?.delay) };
  const at = options?.at;
  const atMs = at instanceof Date ? at.getTime() : at;
  if (typeof atMs !== 'number' || !Number.isFinite(atMs)) {
    throw new InvalidScheduleOptionsError(`at must be a valid Date or epoch milliseconds, got ${String(at)}`);
  }
  return { atMs };
}

export function validateIfExists(value: unknown): IfExists {
  if (value === undefined) return 'replace';
  if (value === 'replace' || value === 'keep') return value;
  throw new InvalidScheduleOptionsError(`ifExists must be 'replace' or 'keep', got ${JSON.stringify(value)}`);
}

export function validatePage(page: PageRequest | undefined): Required<PageRequest> {
  const offset = page?.offset ?? 0;
  const limit = page?.limit ?? DEFAULT_PAGE_LIMIT;
  if (!Number.isInteger(offset) || offset < 0) throw new InvalidScheduleOptionsError(`offset must be a whole number >= 0, got ${offset}`);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_LIMIT) {
    throw new InvalidScheduleOptionsError(`limit must be a whole number from 1 to ${MAX_PAGE_LIMIT}, got ${limit}`);
  }
  return { offset, limit };
}
