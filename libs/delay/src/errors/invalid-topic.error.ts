import { DelayError } from './delay.error';
import { quoteInput } from '../utils/quote-input';

/** A topic that is empty, too long, or uses characters outside [A-Za-z0-9._:-]. */
export class InvalidTopicError extends DelayError {
  readonly code = 'ERR_DELAY_INVALID_TOPIC';

  constructor(readonly topic: unknown, reason: string) {
    super(`Invalid delay topic ${quoteInput(topic)}: ${reason}`);
  }
}
