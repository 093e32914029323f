import { DelayError } from './delay.error';
import { quoteInput } from '../utils/quote-input';

/**
 * `collect` on a key that has a single action pending, or `schedule`,
 * `reschedule` or the redrive of a single action on a key whose batch is
 * open: one key names one kind of thing.
 */
export class ActionKindConflictError extends DelayError {
  readonly code = 'ERR_DELAY_KIND_CONFLICT';

  constructor(
    readonly topic: string,
    readonly key: string,
    pending: 'action' | 'batch',
  ) {
    super(`Key ${quoteInput(key)} of topic ${quoteInput(topic)} already has ${pending === 'batch' ? 'an open batch (from collect)' : 'a single action (from schedule)'} pending; use another key or topic for the other kind`);
  }
}
