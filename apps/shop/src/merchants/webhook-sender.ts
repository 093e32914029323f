import { Injectable } from '@nestjs/common';
import { LookupAddress, LookupOptions } from 'node:dns';
import { request as httpRequest, IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { WebhookBatch } from './merchant-event';
import { WebhookAddressPolicy } from './webhook-address-policy';
import { WebhookDestination } from './webhook-destination';
import { WebhookRequestError } from './webhook-request.error';

/** A receiver that hangs must not hold a handler slot for long: connecting, sending and its answer, all in (resolving the name has its own 3 s). */
const REQUEST_TIMEOUT_MS = 5_000;

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * POSTs a batch as JSON; anything but a 2xx is an error. The URL's host is
 * resolved and checked by WebhookAddressPolicy on every attempt, and the
 * connection goes to the address it checked (no second lookup); a redirect
 * is not followed, since its target was never checked.
 */
@Injectable()
export class WebhookSender {
  constructor(private readonly policy: WebhookAddressPolicy) {}

  async send(url: string, batch: WebhookBatch): Promise<number> {
    const signal = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
    const destination = await this.policy.destination(url);
    const status = await post(destination, JSON.stringify(batch), batch.batchId, signal).catch((error: unknown) => {
      throw new WebhookRequestError(url, undefined, describeRequestError(error, signal));
    });
    if (status >= 300 && status < 400) throw new WebhookRequestError(url, status, `HTTP ${status} (redirects are not followed)`);
    if (status < 200 || status >= 300) throw new WebhookRequestError(url, status, `HTTP ${status}`);
    return status;
  }
}

function post(destination: WebhookDestination, body: string, batchId: string, signal: AbortSignal): Promise<number> {
  const { url, address, family } = destination;
  // Hands the connection the checked address instead of resolving the name again.
  const pinned = (_hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    if (options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<number>((resolve, reject) => {
    const outgoing = request(
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-batch-id': batchId },
        lookup: pinned,
        // A fresh connection each time: a pooled one could have been opened to another address.
        agent: false,
        signal,
      },
      (response: IncomingMessage) => {
        // Drain the body; its content does not matter.
        response.on('error', reject);
        response.on('end', () => resolve(response.statusCode ?? 0));
        // Closed before its end (the time ran out mid-body, say): settled all the same.
        response.on('close', () => {
          if (!response.complete) reject(new Error('the connection closed before the answer ended'));
        });
        response.resume();
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

/** The useful part of a failed request: ECONNREFUSED, a timeout. */
function describeRequestError(error: unknown, signal: AbortSignal): string {
  if (signal.aborted) return `no answer within ${REQUEST_TIMEOUT_MS} ms`;
  const { message, code } = typeof error === 'object' && error !== null ? (error as { message?: unknown; code?: unknown }) : {};
  const head = typeof message === 'string' && message !== '' ? message : String(error);
  return typeof code === 'string' && !head.includes(code) ? `${head} (${code})` : head;
}
