import { Injectable, Logger } from '@nestjs/common';
import { DelayContext, OnRecurring } from 'nestjs-delay';
import { DigestSchedulePayload } from './digest-schedule-payload';
import { MerchantDigestsService } from './merchant-digests.service';
import { MERCHANT_DIGEST } from './merchant-topics';

/**
 * Runs each occurrence of a merchant's digest schedule (key: merchant id).
 * A failed build is retried (after 1 s, 2 s, 4 s, 8 s) as the same
 * occurrence, with the same scheduledAt, so it builds the same day's digest.
 */
@Injectable()
export class MerchantDigestHandler {
  private readonly logger = new Logger(MerchantDigestHandler.name);

  constructor(private readonly digests: MerchantDigestsService) {}

  @OnRecurring(MERCHANT_DIGEST, { attempts: 5, backoff: { type: 'exponential', delay: '1s' } })
  async build({ key: merchantId, payload, occurrence }: DelayContext<DigestSchedulePayload>): Promise<void> {
    if (!occurrence || !payload) {
      this.logger.warn(`A ${MERCHANT_DIGEST} action for "${merchantId}" without an occurrence or a zone was ignored`);
      return;
    }
    await this.digests.build(merchantId, payload.timeZone, occurrence.scheduledAt);
  }
}
