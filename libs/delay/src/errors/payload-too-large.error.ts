import { DelayError } from './delay.error';

/** A payload whose JSON form is larger than `maxPayloadBytes`. */
export class PayloadTooLargeError extends DelayError {
  readonly code = 'ERR_DELAY_PAYLOAD_TOO_LARGE';

  constructor(
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(`Payload is ${bytes} bytes as JSON; the limit is ${limit} bytes (option maxPayloadBytes)`);
  }
}
