import { DelayError } from './delay.error';
import { quoteInput } from '../utils/quote-input';

/** A collected item that would take its key's open batch past `maxBatchBytes`; nothing was added. */
export class BatchTooLargeError extends DelayError {
  readonly code = 'ERR_DELAY_BATCH_TOO_LARGE';

  constructor(
    readonly topic: string,
    readonly key: string,
    /** What the batch would hold with the item, in bytes as stored. */
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(
      `Batch ${quoteInput(key)} of topic ${quoteInput(topic)} would hold ${bytes} bytes with this item; the limit is ${limit} bytes (option maxBatchBytes). ` +
        'Nothing was added: the batch stays as it was, due as before',
    );
  }
}
