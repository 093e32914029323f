import { Transactional } from '@nestjs-cls/transactional';
import { Injectable } from '@nestjs/common';
import { RecurringSchedule } from 'nestjs-delay';
import { ConflictError } from '../common/errors/conflict.error';
import { NotFoundError } from '../common/errors/not-found.error';
import { DigestSchedules } from './digest-schedules';
import { canonicalTimeZone } from './local-day';
import { Merchant } from './merchant';
import { MerchantProfile } from './merchant-profile';
import { MerchantsRepository } from './merchants.repository';

export interface CreateMerchant {
  readonly id: string;
  readonly name: string;
  /** IANA name; default UTC. */
  readonly timeZone?: string;
}

/**
 * Merchants and their zones. A merchant's row and its digest schedule are
 * written in one `@Transactional()` method. On the postgres driver the
 * schedule write joins that transaction (the ambient one), so the two
 * commit or roll back together: a zone the library refuses
 * (UnknownTimeZoneError), a failed schedule write or any failure after it
 * leaves neither. The Redis and wheel drivers write the schedule on their
 * own: it is written last, just before the row commits, and should that
 * commit fail, the digest handler skips a merchant that does not exist and
 * the next start puts every schedule back in its merchant's zone
 * (DigestSchedules).
 */
@Injectable()
export class MerchantsService {
  constructor(
    private readonly merchants: MerchantsRepository,
    private readonly schedules: DigestSchedules,
  ) {}

  @Transactional()
  async create({ id, name, timeZone = 'UTC' }: CreateMerchant): Promise<MerchantProfile> {
    const merchant: Merchant = { id, name, timeZone: canonicalTimeZone(timeZone) };
    if (!(await this.merchants.insert(merchant))) throw new ConflictError(`Merchant "${id}" exists already`);
    return this.profile(merchant, await this.schedules.upsert(merchant));
  }

  @Transactional()
  async changeTimeZone(id: string, timeZone: string): Promise<MerchantProfile> {
    const current = await this.merchants.findByIdForUpdate(id);
    if (!current) throw new NotFoundError('Merchant', id);
    const merchant: Merchant = { ...current, timeZone: canonicalTimeZone(timeZone) };
    await this.merchants.updateTimeZone(id, merchant.timeZone);
    return this.profile(merchant, await this.schedules.upsert(merchant));
  }

  /** Builds the merchant's digest of yesterday (its local yesterday) now, for a demo or after a fix; its 09:00 stays as it is. */
  async runDigestNow(id: string): Promise<{ readonly merchantId: string; readonly started: boolean }> {
    if (!(await this.merchants.findById(id))) throw new NotFoundError('Merchant', id);
    return { merchantId: id, started: await this.schedules.runNow(id) };
  }

  async get(id: string): Promise<MerchantProfile> {
    const merchant = await this.merchants.findById(id);
    if (!merchant) throw new NotFoundError('Merchant', id);
    return this.profile(merchant, await this.schedules.get(id));
  }

  /** The schedule's next 09:00 (the library reports it as soon as the schedule is written); null without a schedule. */
  private profile(merchant: Merchant, schedule: RecurringSchedule | null): MerchantProfile {
    const next = schedule?.nextRunAt ?? null;
    return { ...merchant, nextDigestAt: next === null ? null : next.toISOString() };
  }
}
