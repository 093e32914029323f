import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DelayService, RecurringOptions, RecurringSchedule, UnsupportedOperationError } from 'nestjs-delay';
import { DigestSchedulePayload } from './digest-schedule-payload';
import { Merchant } from './merchant';
import { DIGEST_CRON, MERCHANT_DIGEST } from './merchant-topics';
import { MerchantsRepository } from './merchants.repository';

/** A key no merchant can have (ids are lowercase): read once to learn whether the driver runs recurring schedules. */
const PROBE_KEY = 'Probe';

/**
 * Each merchant's daily digest schedule: key = merchant id, 09:00 every
 * day in the merchant's zone, the zone carried in the payload so the
 * handler takes the day in the zone the 09:00 was computed in.
 *
 * A delay driver without recurring actions refuses these calls with
 * UnsupportedOperationError; the shop then runs without digests (said once
 * in the log) rather than refusing to start or to create merchants.
 */
@Injectable()
export class DigestSchedules implements OnApplicationBootstrap {
  private readonly logger = new Logger(DigestSchedules.name);
  private supported: Promise<boolean> | undefined;

  constructor(
    private readonly delay: DelayService,
    private readonly merchants: MerchantsRepository,
  ) {}

  /**
   * Brings every merchant's schedule up to date: the seeded merchants get
   * theirs on a fresh database, and a store that lost its schedules (Redis
   * emptied, the wheel after a restart) gets them back. Writing a schedule
   * that is already as wanted changes nothing, so every instance may do it.
   * One upsertRecurringMany for all: per 1000 merchants one read, and one
   * write of the schedules created or changed (none on a restart). Nest
   * awaits this before the shop listens, so its first answer (health
   * included) comes once every schedule is written.
   */
  async onApplicationBootstrap(): Promise<void> {
    if (!(await this.isSupported())) return;
    const merchants = await this.merchants.findAll();
    await this.delay.upsertRecurringMany<DigestSchedulePayload>(
      MERCHANT_DIGEST,
      merchants.map((merchant) => ({ key: merchant.id, ...digestSchedule(merchant) })),
    );
    this.logger.log(`Daily digests scheduled at 09:00 local time for ${merchants.length} merchant(s)`);
  }

  /**
   * Creates the merchant's schedule or moves it to its (new) zone; null when
   * the driver has no recurring actions. Called in a `@Transactional()`
   * method on the postgres driver, it joins that transaction (the ambient one).
   */
  async upsert(merchant: Merchant): Promise<RecurringSchedule<DigestSchedulePayload> | null> {
    if (!(await this.isSupported())) return null;
    return this.delay.upsertRecurring<DigestSchedulePayload>(MERCHANT_DIGEST, merchant.id, digestSchedule(merchant));
  }

  /** True if the merchant had a schedule. */
  async remove(merchantId: string): Promise<boolean> {
    if (!(await this.isSupported())) return false;
    return this.delay.removeRecurring(MERCHANT_DIGEST, merchantId);
  }

  /** One extra digest now, of the day before today in the merchant's zone (the daily cadence unchanged); false when the merchant has no schedule. */
  async runNow(merchantId: string): Promise<boolean> {
    if (!(await this.isSupported())) return false;
    return this.delay.runRecurringNow(MERCHANT_DIGEST, merchantId);
  }

  async get(merchantId: string): Promise<RecurringSchedule<DigestSchedulePayload> | null> {
    if (!(await this.isSupported())) return null;
    return this.delay.getRecurring<DigestSchedulePayload>(MERCHANT_DIGEST, merchantId);
  }

  private isSupported(): Promise<boolean> {
    this.supported ??= this.delay.getRecurring(MERCHANT_DIGEST, PROBE_KEY).then(
      () => true,
      (error: unknown) => {
        if (!(error instanceof UnsupportedOperationError)) {
          // Not an answer about the driver (the store did not answer, say): ask again next time.
          this.supported = undefined;
          throw error;
        }
        this.logger.warn(`Merchants' daily digests are off: ${error.message}; they need a delay driver with recurring actions`);
        return false;
      },
    );
    return this.supported;
  }
}

/** A merchant's digest schedule: 09:00 every day in its zone. */
function digestSchedule(merchant: Merchant): RecurringOptions<DigestSchedulePayload> {
  return {
    cron: DIGEST_CRON,
    timeZone: merchant.timeZone,
    // Digests of days the shop was down for, up to a week back, each once (a digest per local date).
    missed: { within: '7d' },
    // One day's digest still retrying does not hold back the next day's.
    overlap: 'allow',
    payload: { timeZone: merchant.timeZone },
  };
}
