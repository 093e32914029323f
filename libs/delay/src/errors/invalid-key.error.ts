import { DelayError } from './delay.error';
import { quoteInput } from '../utils/quote-input';

/** A key that is not a string, is empty, is longer than the limit, or holds U+001F (reserved) or a lone surrogate. */
export class InvalidKeyError extends DelayError {
  readonly code = 'ERR_DELAY_INVALID_KEY';

  constructor(readonly key: unknown, reason: string) {
    super(`Invalid delay key ${quoteInput(key)}: ${reason}`);
  }
}
