import { DelayError } from './delay.error';
import { quoteInput } from '../utils/quote-input';

/** The configured driver (a custom one) does not implement this operation. */
export class UnsupportedOperationError extends DelayError {
  readonly code = 'ERR_DELAY_UNSUPPORTED';

  constructor(operation: string, driver: string) {
    super(`The ${quoteInput(driver)} delay driver does not support ${operation}`);
  }
}
