import { Injectable } from '@nestjs/common';
import { DelayClock } from 'nestjs-delay';
import { NotFoundError } from '../common/errors/not-found.error';
import { newToken, secretDigest } from '../common/secrets';
import { IssuedMerchantToken } from './issued-merchant-token';
import { Merchant } from './merchant';
import { MerchantTokensRepository } from './merchant-tokens.repository';
import { MerchantsRepository } from './merchants.repository';
import { WebhookAddressPolicy } from './webhook-address-policy';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository';
import { WebhookDelivery } from './webhook-delivery';
import { WebhookSubscription } from './webhook-subscription';
import { WebhookSubscriptionsRepository } from './webhook-subscriptions.repository';

/** What anyone may see of a merchant: not where its webhook goes, which only the merchant may read. */
export interface MerchantListing extends Merchant {
  readonly subscribed: boolean;
}

/** Merchants' webhook subscriptions and what was delivered to them. */
@Injectable()
export class WebhooksService {
  constructor(
    private readonly merchants: MerchantsRepository,
    private readonly subscriptions: WebhookSubscriptionsRepository,
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly tokens: MerchantTokensRepository,
    private readonly policy: WebhookAddressPolicy,
    private readonly clock: DelayClock,
  ) {}

  listMerchants(): MerchantListing[] {
    return this.merchants.findAll().map((merchant) => ({ ...merchant, subscribed: this.subscriptions.findByMerchantId(merchant.id) !== undefined }));
  }

  /**
   * A new token for the merchant, replacing any earlier one (which stops
   * working at once). The shop keeps only its digest: this is the one time
   * the token is shown.
   */
  issueToken(merchantId: string): IssuedMerchantToken {
    this.merchant(merchantId);
    const token = newToken();
    this.tokens.save(merchantId, secretDigest(token));
    return { merchantId, token };
  }

  /**
   * Replaces any earlier URL; batches already collected go to the new one.
   * A URL whose host is or resolves to a loopback, private or other
   * special-purpose address is refused (WebhookDestinationRefusedError),
   * and checked again at every delivery.
   */
  async subscribe(merchantId: string, url: string): Promise<WebhookSubscription> {
    this.merchant(merchantId);
    await this.policy.destination(url);
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
