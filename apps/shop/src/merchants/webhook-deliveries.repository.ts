import { Injectable } from '@nestjs/common';
import { WebhookDelivery } from './webhook-delivery';

/** Most attempts kept per merchant; the oldest go first, so a failing URL cannot grow memory forever. */
const MAX_PER_MERCHANT = 200;

/** In-memory log of webhook attempts, per merchant, oldest first. */
@Injectable()
export class WebhookDeliveriesRepository {
  private readonly deliveries = new Map<string, WebhookDelivery[]>();

  record(delivery: WebhookDelivery): void {
    const log = this.deliveries.get(delivery.merchantId) ?? [];
    log.push(delivery);
    if (log.length > MAX_PER_MERCHANT) log.splice(0, log.length - MAX_PER_MERCHANT);
    this.deliveries.set(delivery.merchantId, log);
  }

  findByMerchantId(merchantId: string): WebhookDelivery[] {
    return [...(this.deliveries.get(merchantId) ?? [])];
  }
}
