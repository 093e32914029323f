import { Injectable, Logger } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { DelayClock, DelayContext, OnDelayExpired } from 'nestjs-delay';
import { MerchantEvent, WebhookBatch } from './merchant-event';
import { MERCHANT_WEBHOOK } from './merchant-topics';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository';
import { WebhookRequestError } from './webhook-request.error';
import { WebhookSender } from './webhook-sender';
import { WebhookSubscriptionsRepository } from './webhook-subscriptions.repository';

/**
 * Sends one merchant's collected events as one POST. A failed POST throws,
 * so the library retries it (after 1 s, then 2 s) and then moves the batch
 * to the dead set, from where /admin can re-drive it once the merchant's
 * URL works again. Retries carry the same batchId, so a receiver that saw
 * the first attempt succeed can ignore the repeat.
 */
@Injectable()
export class WebhookBatchHandler {
  private readonly logger = new Logger(WebhookBatchHandler.name);

  constructor(
    private readonly subscriptions: WebhookSubscriptionsRepository,
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly sender: WebhookSender,
    private readonly clock: DelayClock,
  ) {}

  @OnDelayExpired(MERCHANT_WEBHOOK, { attempts: 3, backoff: { type: 'exponential', delay: '1s' } })
  async deliver({ key: merchantId, items, attempt }: DelayContext<unknown, MerchantEvent>): Promise<void> {
    const events = items ?? [];
    if (events.length === 0) return;
    // Read at delivery time, not collection time: a merchant who fixed their URL gets the retry there.
    const subscription = await this.subscriptions.findByMerchantId(merchantId);
    if (!subscription) {
      this.logger.warn(`Dropped a batch of ${events.length} event(s) for merchant "${merchantId}": no webhook subscription any more`);
      return;
    }
    const batch: WebhookBatch = { batchId: batchIdOf(events), merchantId, events };
    const base = { batchId: batch.batchId, merchantId, url: subscription.url, eventCount: events.length, attempt };
    try {
      const httpStatus = await this.sender.send(subscription.url, batch);
      await this.deliveries.record({ ...base, outcome: 'delivered', httpStatus, at: this.now() });
      this.logger.log(`Sent ${events.length} event(s) to merchant "${merchantId}" as batch ${batch.batchId}`);
    } catch (error) {
      const httpStatus = error instanceof WebhookRequestError ? error.httpStatus : undefined;
      await this.deliveries.record({ ...base, outcome: 'failed', httpStatus, error: error instanceof Error ? error.message : String(error), at: this.now() });
      throw error;
    }
  }

  private now(): string {
    return new Date(this.clock.now()).toISOString();
  }
}

/** Derived from the events, so every retry of one batch has the same id. */
function batchIdOf(events: readonly MerchantEvent[]): string {
  return createHash('sha256')
    .update(events.map((event) => event.id).join('\n'))
    .digest('hex')
    .slice(0, 16);
}
