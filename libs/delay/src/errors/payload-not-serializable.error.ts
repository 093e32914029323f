import { DelayError } from './delay.error';

/** A payload JSON cannot represent faithfully: BigInt, a cycle, a function. */
export class PayloadNotSerializableError extends DelayError {
  readonly code = 'ERR_DELAY_PAYLOAD_NOT_SERIALIZABLE';

  constructor(reason: string) {
    super(`Payload is not JSON-serialisable: ${reason}`);
  }
}
