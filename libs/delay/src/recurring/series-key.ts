import { InvalidKeyError } from '../errors/invalid-key.error';
import { validateKey } from '../validation/action-input';
import { MAX_SERIES_KEY_LENGTH, SERIES_SEPARATOR } from './occurrence-key';

/** A schedule key: a valid key without U+001E (it separates a schedule's key from its occurrences'), short enough for an occurrence key. */
export function validateSeriesKey(key: unknown): string {
  const valid = validateKey(key);
  if (valid.includes(SERIES_SEPARATOR)) throw new InvalidKeyError(key, 'contains U+001E, which is reserved for the occurrences of a recurring schedule');
  if (valid.length > MAX_SERIES_KEY_LENGTH) throw new InvalidKeyError(key, `a recurring schedule's key may be at most ${MAX_SERIES_KEY_LENGTH} characters`);
  return valid;
}
