import { DelayError } from './delay.error';

/** A key that is not a string, is empty, or is longer than the limit. */
export class InvalidKeyError extends DelayError {
  readonly code = 'ERR_DELAY_INVALID_KEY';

  constructor(readonly key: unknown, reason: string) {
    super(`Invalid delay key ${typeof key === 'string' ? JSON.stringify(key.slice(0, 64)) : String(key)}: ${reason}`);
  }
}
