import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { WebhookSubscription } from './webhook-subscription';
import { WebhookSubscriptionEntity } from './webhook-subscription.entity';

/** Subscriptions in `webhook_subscriptions`: at most one URL per merchant. */
@Injectable()
export class WebhookSubscriptionsRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  async findByMerchantId(merchantId: string): Promise<WebhookSubscription | undefined> {
    const row = await this.txHost.tx.findOneBy(WebhookSubscriptionEntity, { merchantId });
    return row ? { merchantId: row.merchantId, url: row.url, subscribedAt: row.subscribedAt.toISOString() } : undefined;
  }

  async save(subscription: WebhookSubscription): Promise<void> {
    await this.txHost.tx.upsert(WebhookSubscriptionEntity, { ...subscription, subscribedAt: new Date(subscription.subscribedAt) }, ['merchantId']);
  }

  async delete(merchantId: string): Promise<boolean> {
    return ((await this.txHost.tx.delete(WebhookSubscriptionEntity, { merchantId })).affected ?? 0) > 0;
  }
}
