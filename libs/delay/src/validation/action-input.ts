import { InvalidDurationError } from '../errors/invalid-duration.error';
import { InvalidKeyError } from '../errors/invalid-key.error';
import { InvalidPageError } from '../errors/invalid-page.error';
import { InvalidScheduleOptionsError } from '../errors/invalid-schedule-options.error';
import { InvalidTopicError } from '../errors/invalid-topic.error';
import { DueSpec } from '../interfaces/delay-driver.interface';
import { CollectOptions, DueTime, IfExists } from '../interfaces/schedule-options.interface';
import { PageRequest } from '../interfaces/pending-action.interface';
import { parseDuration } from '../time/duration';
import { quoteInput } from '../utils/quote-input';

export const MAX_TOPIC_LENGTH = 100;
export const MAX_KEY_LENGTH = 512;
export const DEFAULT_PAGE_LIMIT = 100;
export const MAX_PAGE_LIMIT = 1000;
/**
 * The largest offset of list / listDead: every driver reads up to it (the
 * postgres driver's statements take offset and limit as 32-bit integers, and
 * MAX_PAGE_OFFSET + MAX_PAGE_LIMIT stays below 2^31 - 1).
 */
export const MAX_PAGE_OFFSET = 1_000_000_000;

/**
 * Topics become part of Redis key names inside a `{hash tag}`, so they keep
 * to a safe alphabet; keys are opaque and may hold any character.
 */
const TOPIC_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;

/** The last topic that passed: most applications use a handful, so the pattern rarely runs. */
let lastValidTopic = '';

export function validateTopic(topic: unknown): string {
  if (topic === lastValidTopic && topic !== '') return topic;
  if (typeof topic !== 'string') throw new InvalidTopicError(topic, 'must be a string');
  if (topic.length === 0) throw new InvalidTopicError(topic, 'must not be empty');
  if (topic.length > MAX_TOPIC_LENGTH) throw new InvalidTopicError(topic, `longer than ${MAX_TOPIC_LENGTH} characters`);
  if (!TOPIC_PATTERN.test(topic)) {
    throw new InvalidTopicError(topic, 'use letters, digits and . _ : - only, starting with a letter or digit');
  }
  lastValidTopic = topic;
  return topic;
}

/** Half of a surrogate pair on its own: not Unicode, with no UTF-8 form. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function validateKey(key: unknown): string {
  if (typeof key !== 'string') throw new InvalidKeyError(key, `must be a string, got ${typeof key}`);
  const length = key.length;
  if (length === 0) throw new InvalidKeyError(key, 'must not be empty');
  if (length > MAX_KEY_LENGTH) throw new InvalidKeyError(key, `longer than ${MAX_KEY_LENGTH} characters`);
  // One pass over the code units; the regular expressions run only on a key that holds a suspect unit.
  for (let n = 0; n < length; n++) {
    const unit = key.charCodeAt(n);
    if (unit === 0x1f || (unit >= 0xd800 && unit <= 0xdfff)) {
      checkRareUnits(key);
      break;
    }
  }
  return key;
}

function checkRareUnits(key: string): void {
  // U+001F joins a key and a token in the id of a closed batch (drivers/redis/lua/collect.lua).
  if (key.includes('\u001f')) throw new InvalidKeyError(key, 'contains U+001F, which is reserved for batch ids');
  if (LONE_SURROGATE.test(key)) throw new InvalidKeyError(key, 'contains a lone surrogate, which Redis would store as U+FFFD (two such keys would collide)');
}

/** A DeadAction id: a key, or a key plus U+001F and a token for a dead batch. */
export function validateDeadId(id: unknown): string {
  const separator = typeof id === 'string' ? id.lastIndexOf('\u001f') : -1;
  validateKey(typeof id === 'string' && separator >= 0 ? id.slice(0, separator) : id);
  const token = (id as string).slice(separator + 1);
  if (separator >= 0 && !/^\d{1,20}$/.test(token)) throw new InvalidKeyError(id, 'not an id listDead gave');
  return id as string;
}

/** Turns `{ delay }` or `{ at }` into a DueSpec; the driver resolves it on its clock. */
export function toDueSpec(options: Partial<DueTime> | undefined): DueSpec {
  const delay = options?.delay;
  const at = options?.at;
  if (delay !== undefined) {
    if (at !== undefined) throw new InvalidScheduleOptionsError('give either delay or at, not both');
    return { delayMs: parseDuration(delay) };
  }
  if (at === undefined) throw new InvalidScheduleOptionsError('a due time is required: give delay (e.g. "30m") or at (a Date or epoch ms)');
  const atMs = at instanceof Date ? at.getTime() : at;
  if (typeof atMs !== 'number' || !Number.isFinite(atMs)) {
    throw new InvalidScheduleOptionsError(`at must be a valid Date or epoch milliseconds, got ${quoteInput(at instanceof Date ? String(at) : at)}`);
  }
  return { atMs };
}

/** reschedule's due time: schedule's options that reschedule would ignore are refused, not dropped. */
export function toRescheduleDueSpec(due: Partial<DueTime> | undefined): DueSpec {
  if (typeof due === 'object' && due !== null) {
    const ignored = (due as { payload?: unknown }).payload !== undefined ? 'payload' : (due as { ifExists?: unknown }).ifExists !== undefined ? 'ifExists' : undefined;
    if (ignored !== undefined) throw new InvalidScheduleOptionsError(`reschedule keeps the action's payload and takes only delay or at, got ${ignored}: use schedule to replace the action`);
  }
  return toDueSpec(due);
}

/** What collect's options come to, checked. */
export interface CollectSpec {
  readonly windowMs: number;
  readonly maxWaitMs: number | undefined;
  readonly slide: boolean;
  readonly maxItems: number;
}

/** Checks collect's options, including the combinations that would mean nothing. */
export function toCollectSpec(options: CollectOptions | undefined, horizonMs: number, maxBatchItems: number): CollectSpec {
  if (typeof options !== 'object' || options === null) throw new InvalidScheduleOptionsError('collect options are required, e.g. { window: "3s" }');
  const windowMs = parseDuration(options.window);
  if (windowMs > horizonMs) throw new InvalidDurationError(options.window, "beyond the driver's horizon");
  const maxItems = options.maxItems ?? maxBatchItems;
  if (!Number.isInteger(maxItems) || maxItems < 1 || maxItems > maxBatchItems) {
    throw new InvalidScheduleOptionsError(`maxItems must be a whole number from 1 to ${maxBatchItems} (option maxBatchItems), got ${quoteInput(options.maxItems)}`);
  }
  if (options.slide !== undefined && typeof options.slide !== 'boolean') throw new InvalidScheduleOptionsError('slide must be true or false');
  const slide = options.slide ?? false;
  if (options.maxWait === undefined) return { windowMs, maxWaitMs: undefined, slide, maxItems };
  // Without slide a batch is due one window after its first item: a maxWait would never be reached, or would replace the window.
  if (!slide) throw new InvalidScheduleOptionsError('maxWait bounds a sliding window: give slide: true with it, or leave it out');
  const maxWaitMs = parseDuration(options.maxWait);
  if (maxWaitMs > horizonMs) throw new InvalidDurationError(options.maxWait, "beyond the driver's horizon");
  if (maxWaitMs < windowMs) {
    throw new InvalidScheduleOptionsError(`maxWait (${maxWaitMs} ms) is shorter than window (${windowMs} ms): every batch would be due at maxWait and slide would do nothing`);
  }
  return { windowMs, maxWaitMs, slide, maxItems };
}

export function validateIfExists(value: unknown): IfExists {
  if (value === undefined) return 'replace';
  if (value === 'replace' || value === 'keep') return value;
  throw new InvalidScheduleOptionsError(`ifExists must be 'replace' or 'keep', got ${quoteInput(value)}`);
}

/** Checks a page of list / listDead against the bounds every driver can honour; throws InvalidPageError otherwise. */
export function validatePage(page: PageRequest | undefined): Required<PageRequest> {
  const offset = page?.offset ?? 0;
  const limit = page?.limit ?? DEFAULT_PAGE_LIMIT;
  if (!Number.isInteger(offset) || offset < 0 || offset > MAX_PAGE_OFFSET) {
    throw new InvalidPageError(`offset must be a whole number from 0 to ${MAX_PAGE_OFFSET}, got ${quoteInput(offset)}`);
  }
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_LIMIT) {
    throw new InvalidPageError(`limit must be a whole number from 1 to ${MAX_PAGE_LIMIT}, got ${quoteInput(limit)}`);
  }
  return { offset, limit };
}
