import { Injectable } from '@nestjs/common';
import { WebhookSubscription } from './webhook-subscription';

/** In-memory subscriptions: at most one URL per merchant. */
@Injectable()
export class WebhookSubscriptionsRepository {
  private readonly subscriptions = new Map<string, WebhookSubscription>();

  findByMerchantId(merchantId: string): WebhookSubscription | undefined {
    return this.subscriptions.get(merchantId);
  }

  save(subscription: WebhookSubscription): void {
    this.subscriptions.set(subscription.merchantId, subscription);
  }

  delete(merchantId: string): boolean {
    return this.subscriptions.delete(merchantId);
  }
}
