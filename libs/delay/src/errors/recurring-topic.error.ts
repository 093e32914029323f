import { DelayError } from './delay.error';
import { quoteInput } from '../utils/quote-input';

/**
 * A call that does not fit the kind of topic: `schedule`, `scheduleMany` or
 * `collect` on a recurring topic (its actions are its schedules' ticks and
 * occurrences), a recurring call on a topic handled by @OnDelayExpired, or a
 * schedule key that names an action that is no schedule.
 */
export class RecurringTopicError extends DelayError {
  readonly code = 'ERR_DELAY_RECURRING_TOPIC';

  constructor(
    readonly topic: string,
    reason: string,
  ) {
    super(`Topic ${quoteInput(topic)}: ${reason}`);
  }
}
