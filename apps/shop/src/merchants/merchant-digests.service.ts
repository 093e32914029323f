import { Transactional } from '@nestjs-cls/transactional';
import { Injectable, Logger } from '@nestjs/common';
import { DelayClock } from 'nestjs-delay';
import { NotFoundError } from '../common/errors/not-found.error';
import { previousLocalDay } from './local-day';
import { MerchantDigest } from './merchant-digest';
import { MerchantDigestsRepository } from './merchant-digests.repository';
import { MerchantEventsCollector } from './merchant-events.collector';
import { MerchantsRepository } from './merchants.repository';
import { WebhookSubscriptionsRepository } from './webhook-subscriptions.repository';

/** The outcome of building one digest. */
export interface DigestBuilt {
  readonly digest: MerchantDigest;
  /** False when the merchant already had a digest for that date (a retried or repeated occurrence): nothing was stored or sent. */
  readonly stored: boolean;
}

/**
 * Builds a merchant's daily digest and hands it to the merchant's webhook.
 * The day is the merchant's local day before the occurrence's 09:00, in the
 * zone that 09:00 was computed in; its sales are read from the orders. One
 * digest per merchant and local date (the table's key), so a retry of the
 * same occurrence, or a second occurrence for the same date, stores and
 * sends nothing more.
 */
@Injectable()
export class MerchantDigestsService {
  private readonly logger = new Logger(MerchantDigestsService.name);

  constructor(
    private readonly merchants: MerchantsRepository,
    private readonly digests: MerchantDigestsRepository,
    private readonly subscriptions: WebhookSubscriptionsRepository,
    private readonly collector: MerchantEventsCollector,
    private readonly clock: DelayClock,
  ) {}

  /**
   * One transaction: the digest row and, for a subscribed merchant, its
   * webhook event. On the postgres delay driver the event is collected if
   * and only if the row commits; elsewhere a failure after the collect can
   * send it twice, with the same event id.
   */
  @Transactional()
  async build(merchantId: string, timeZone: string, scheduledAt: Date): Promise<DigestBuilt | undefined> {
    if (!(await this.merchants.findById(merchantId))) {
      this.logger.warn(`Digest of merchant "${merchantId}" skipped: no such merchant`);
      return undefined;
    }
    const day = previousLocalDay(scheduledAt, timeZone);
    const sales = await this.digests.sales(merchantId, day);
    const digest: MerchantDigest = {
      merchantId,
      localDate: day.date,
      timeZone,
      from: day.from.toISOString(),
      to: day.to.toISOString(),
      ...sales,
      scheduledAt: scheduledAt.toISOString(),
      builtAt: new Date(this.clock.now()).toISOString(),
    };
    if (!(await this.digests.insertIfAbsent(digest))) {
      this.logger.log(`Digest of merchant "${merchantId}" for ${day.date} exists already: not built again`);
      return { digest, stored: false };
    }
    if (await this.subscriptions.findByMerchantId(merchantId)) {
      await this.collector.add(merchantId, { id: `digest:${merchantId}:${day.date}`, type: 'merchant.digest', digest, at: digest.builtAt });
    }
    this.logger.log(`Digest of merchant "${merchantId}" for ${day.date} (${timeZone}): ${digest.ordersCount} order(s), ${digest.revenueCents} cents`);
    return { digest, stored: true };
  }

  async list(merchantId: string): Promise<MerchantDigest[]> {
    if (!(await this.merchants.findById(merchantId))) throw new NotFoundError('Merchant', merchantId);
    return this.digests.findByMerchantId(merchantId);
  }
}
