import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { Merchant } from './merchant';
import { MerchantEntity } from './merchant.entity';

/** The merchants, in `merchants` (seeded by the first migration). */
@Injectable()
export class MerchantsRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  async findById(id: string): Promise<Merchant | undefined> {
    const row = await this.txHost.tx.findOneBy(MerchantEntity, { id });
    return row ? { id: row.id, name: row.name } : undefined;
  }

  async findAll(): Promise<Merchant[]> {
    return (await this.txHost.tx.find(MerchantEntity, { order: { id: 'ASC' } })).map((row) => ({ id: row.id, name: row.name }));
  }
}
