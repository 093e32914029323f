import { Injectable } from '@nestjs/common';

/** The digest of each merchant's current token (never the token itself), in memory. */
@Injectable()
export class MerchantTokensRepository {
  private readonly digests = new Map<string, Buffer>();

  findDigest(merchantId: string): Buffer | undefined {
    return this.digests.get(merchantId);
  }

  save(merchantId: string, digest: Buffer): void {
    this.digests.set(merchantId, digest);
  }
}
