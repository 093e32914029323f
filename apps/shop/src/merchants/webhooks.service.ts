import { Injectable } from '@nestjs/common';
import { DelayClock } from 'nestjs-delay';
import { NotFoundError } from '../common/errors/not-found.error';
import { Merchant } from './merchant';
import { MerchantsRepository } from './merchants.repository';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository';
import { WebhookDelivery } from './webhook-delivery';
import { WebhookSubscription } from './webhook-subscription';
import { WebhookSubscriptionsRepository } from './webhook-subscriptions.repository';

export interface MerchantWithWebhook extends Merchant {
  readonly webhook: WebhookSubscription | null;
}

/** Merchants' webhook subscriptions and what was delivered to them. */
@Injectable()
export class WebhooksService {
  constructor(
    private readonly merchants: MerchantsRepository,
    private readonly subscriptions: WebhookSubscriptionsRepository,
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly clock: DelayClock,
  ) {}

  listMerchants(): MerchantWithWebhook[] {
    return this.merchants.findAll().map((merchant) => ({ ...merchant, webhook: this.subscriptions.findByMerchantId(merchant.id) ?? null }));
  }

  /** Replaces any earlier URL; batches already collected go to the new one. */
  subscribe(merchantId: string, url: string): WebhookSubscription {
    this.merchant(merchantId);
    const subscription: WebhookSubscription = { merchantId, url, subscribedAt: new Date(this.clock.now()).toISOString() };
    this.subscriptions.save(subscription);
    return subscription;
  }

  getSubscription(merchantId: string): WebhookSubscription {
    this.merchant(merchantId);
    const subscription = this.subscriptions.findByMerchantId(merchantId);
    if (!subscription) throw new NotFoundError('Webhook subscription of merchant', merchantId);
    return subscription;
  }

  unsubscribe(merchantId: string): void {
    this.merchant(merchantId);
    if (!this.subscriptions.delete(merchantId)) throw new NotFoundError('Webhook subscription of merchant', merchantId);
  }

  listDeliveries(merchantId: string): WebhookDelivery[] {
    this.merchant(merchantId);
    return this.deliveries.findByMerchantId(merchantId);
  }

  private merchant(merchantId: string): Merchant {
    const merchant = this.merchants.findById(merchantId);
    if (!merchant) throw new NotFoundError('Merchant', merchantId);
    return merchant;
  }
}
