import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { Merchant } from './merchant';
import { MerchantEntity } from './merchant.entity';

/** The merchants, in `merchants` (the demo ones seeded by the first migration). */
@Injectable()
export class MerchantsRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  async findById(id: string): Promise<Merchant | undefined> {
    const row = await this.txHost.tx.findOneBy(MerchantEntity, { id });
    return row ? toMerchant(row) : undefined;
  }

  /** The merchant, its row locked until the transaction ends, so two changes of its zone apply one after the other. */
  async findByIdForUpdate(id: string): Promise<Merchant | undefined> {
    const row = await this.txHost.tx.getRepository(MerchantEntity).findOne({ where: { id }, lock: { mode: 'pessimistic_write' } });
    return row ? toMerchant(row) : undefined;
  }

  async findAll(): Promise<Merchant[]> {
    return (await this.txHost.tx.find(MerchantEntity, { order: { id: 'ASC' } })).map(toMerchant);
  }

  /** False when a merchant with that id exists already (nothing is changed then). */
  async insert(merchant: Merchant): Promise<boolean> {
    const rows: unknown[] = await this.txHost.tx.query(`INSERT INTO merchants (id, name, time_zone) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING RETURNING id`, [
      merchant.id,
      merchant.name,
      merchant.timeZone,
    ]);
    return rows.length === 1;
  }

  async updateTimeZone(id: string, timeZone: string): Promise<void> {
    await this.txHost.tx.update(MerchantEntity, { id }, { timeZone });
  }
}

function toMerchant(row: MerchantEntity): Merchant {
  return { id: row.id, name: row.name, timeZone: row.timeZone };
}
