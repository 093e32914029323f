import { InvalidInputError } from '../common/errors/invalid-input.error';

/** A webhook URL the shop will not call: its host is, or resolves to, an address inside a special-purpose network. */
export class WebhookDestinationRefusedError extends InvalidInputError {
  constructor(
    readonly url: string,
    reason: string,
  ) {
    super(`Webhook URL ${url} refused: ${reason}`);
  }
}
