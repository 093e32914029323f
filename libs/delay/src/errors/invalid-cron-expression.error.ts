import { DelayError } from './delay.error';
import { quoteInput } from '../utils/quote-input';

/** A cron expression that does not parse: wrong number of fields, a value out of range, an unknown name or modifier. */
export class InvalidCronExpressionError extends DelayError {
  readonly code = 'ERR_DELAY_INVALID_CRON_EXPRESSION';

  constructor(readonly expression: unknown, reason: string, cause?: unknown) {
    super(`Invalid cron expression ${quoteInput(expression)}: ${reason}`, cause);
  }
}
