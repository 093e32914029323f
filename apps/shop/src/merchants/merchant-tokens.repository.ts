import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { MerchantTokenEntity } from './merchant-token.entity';

/** The digest of each merchant's current token (never the token itself), in `merchant_tokens`. */
@Injectable()
export class MerchantTokensRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  async findDigest(merchantId: string): Promise<Buffer | undefined> {
    return (await this.txHost.tx.findOneBy(MerchantTokenEntity, { merchantId }))?.digest;
  }

  /** Replaces the merchant's digest, so the old token stops working at once. */
  async save(merchantId: string, digest: Buffer, issuedAt: Date): Promise<void> {
    await this.txHost.tx.upsert(MerchantTokenEntity, { merchantId, digest, issuedAt }, ['merchantId']);
  }
}
