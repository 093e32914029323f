import { DelayError } from './delay.error';
import { quoteInput } from '../utils/quote-input';

/** A duration that is negative, not finite, or a string that does not parse ('30s', '1h30m', '7d'). */
export class InvalidDurationError extends DelayError {
  readonly code = 'ERR_DELAY_INVALID_DURATION';

  constructor(readonly value: unknown, reason: string) {
    super(`Invalid duration ${quoteInput(value)}: ${reason}`);
  }
}
