import { Injectable } from '@nestjs/common';
import { Merchant } from './merchant';
import { MERCHANTS_SEED } from './merchants.seed';

/** In-memory merchants, seeded at startup. */
@Injectable()
export class MerchantsRepository {
  private readonly merchants = new Map<string, Merchant>(MERCHANTS_SEED.map((merchant) => [merchant.id, merchant]));

  findById(id: string): Merchant | undefined {
    return this.merchants.get(id);
  }

  findAll(): Merchant[] {
    return Array.from(this.merchants.values());
  }
}
