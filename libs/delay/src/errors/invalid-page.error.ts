import { DelayError } from './delay.error';

/** A page of list / listDead that no driver can read: an offset or limit that is not a whole number, or out of bounds. */
export class InvalidPageError extends DelayError {
  readonly code = 'ERR_DELAY_INVALID_PAGE';

  constructor(reason: string) {
    super(`Invalid page: ${reason}`);
  }
}
