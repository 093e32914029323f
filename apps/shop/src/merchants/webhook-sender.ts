import { Injectable } from '@nestjs/common';
import { WebhookBatch } from './merchant-event';
import { WebhookRequestError } from './webhook-request.error';

/** A receiver that hangs must not hold a handler slot for long. */
const REQUEST_TIMEOUT_MS = 5_000;

/** POSTs a batch as JSON with Node's fetch; anything but a 2xx is an error. */
@Injectable()
export class WebhookSender {
  async send(url: string, batch: WebhookBatch): Promise<number> {
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-batch-id': batch.batchId },
        body: JSON.stringify(batch),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      throw new WebhookRequestError(url, undefined, describeFetchError(error));
    }
    // Drain the body so the connection can be reused; its content does not matter.
    await response.arrayBuffer().catch(() => undefined);
    if (!response.ok) throw new WebhookRequestError(url, response.status, `HTTP ${response.status}`);
    return response.status;
  }
}

/**
 * fetch hides the useful part (ECONNREFUSED, a timeout) in `cause`. Read by
 * shape, not instanceof: fetch's errors may come from another realm (a test
 * runner's sandbox, say).
 */
function describeFetchError(error: unknown): string {
  const { message, cause } = fieldsOf(error);
  const { message: causeMessage, code } = fieldsOf(cause);
  const head = typeof message === 'string' && message !== '' ? message : String(error);
  const detail = [causeMessage, code].find((part): part is string => typeof part === 'string' && part !== '');
  return detail === undefined ? head : `${head} (${detail})`;
}

function fieldsOf(value: unknown): { message?: unknown; code?: unknown; cause?: unknown } {
  return typeof value === 'object' && value !== null ? value : {};
}
