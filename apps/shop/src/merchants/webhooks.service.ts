import { Transactional } from '@nestjs-cls/transactional';
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

  async listMerchants(): Promise<MerchantListing[]> {
    const merchants = await this.merchants.findAll();
    return Promise.all(merchants.map(async (merchant) => ({ ...merchant, subscribed: (await this.subscriptions.findByMerchantId(merchant.id)) !== undefined })));
  }

  /**
   * A new token for the merchant, replacing any earlier one (which stops
   * working at once). The shop keeps only its digest: this is the one time
   * the token is shown.
   */
  async issueToken(merchantId: string): Promise<IssuedMerchantToken> {
    await this.merchant(merchantId);
    const token = newToken();
    await this.tokens.save(merchantId, secretDigest(token), new Date(this.clock.now()));
    return { merchantId, token };
  }

  /**
   * Replaces any earlier URL; batches already collected go to the new one.
   * A URL whose host is or resolves to a loopback, private or other
   * special-purpose address is refused (WebhookDestinationRefusedError),
   * and checked again at every delivery.
   */
  async subscribe(merchantId: string, url: string): Promise<WebhookSubscription> {
    await this.merchant(merchantId);
    await this.policy.destination(url);
    const subscription: WebhookSubscription = { merchantId, url, subscribedAt: new Date(this.clock.now()).toISOString() };
    await this.subscriptions.save(subscription);
    return subscription;
  }

  async getSubscription(merchantId: string): Promise<WebhookSubscription> {
    await this.merchant(merchantId);
    const subscription = await this.subscriptions.findByMerchantId(merchantId);
    if (!subscription) throw new NotFoundError('Webhook subscription of merchant', merchantId);
    return subscription;
  }

  @Transactional()
  async unsubscribe(merchantId: string): Promise<void> {
    await this.merchant(merchantId);
    if (!(await this.subscriptions.delete(merchantId))) throw new NotFoundError('Webhook subscription of merchant', merchantId);
  }

  async listDeliveries(merchantId: string): Promise<WebhookDelivery[]> {
    await this.merchant(merchantId);
    return this.deliveries.findByMerchantId(merchantId);
  }

  private async merchant(merchantId: string): Promise<Merchant> {
    const merchant = await this.merchants.findById(merchantId);
    if (!merchant) throw new NotFoundError('Merchant', merchantId);
    return merchant;
  }
}
