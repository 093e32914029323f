import { DelayError } from './delay.error';

/** A key that is not a string, is empty, is longer than the limit, or holds U+001F (reserved) or a lone surrogate. */
export class InvalidKeyError extends DelayError {
  readonly code = 'ERR_DELAY_INVALID_KEY';

  constructor(readonly key: unknown, reason: string) {
    super(`Invalid delay key ${typeof key === 'string' ? JSON.stringify(key.slice(0, 64)) : String(key)}: ${reason}`);
  }
}
