import { DelayError } from './delay.error';
import { quoteInput } from '../utils/quote-input';

/** Two @OnDelayExpired handlers for one topic: a topic has exactly one handler per application. */
export class DuplicateHandlerError extends DelayError {
  readonly code = 'ERR_DELAY_DUPLICATE_HANDLER';

  constructor(
    readonly topic: string,
    readonly first: string,
    readonly second: string,
  ) {
    super(`Topic ${quoteInput(topic)} has two @OnDelayExpired handlers: ${first} and ${second}. A topic has one handler; remove one or give it another topic.`);
  }
}
