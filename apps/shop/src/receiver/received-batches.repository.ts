import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { ReceivedBatch } from './received-batch';
import { ReceivedBatchEntity } from './received-batch.entity';

/** Most batches kept per merchant, so a long demo cannot grow the table forever. */
const MAX_PER_MERCHANT = 200;

/** What the demo receiver got, in `received_batches`, per merchant, in arrival order. */
@Injectable()
export class ReceivedBatchesRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  async record(batch: ReceivedBatch): Promise<void> {
    await this.txHost.tx.insert(ReceivedBatchEntity, {
      batchId: batch.batchId,
      merchantId: batch.merchantId,
      events: [...batch.events],
      receivedAt: new Date(batch.receivedAt),
      duplicate: batch.duplicate,
    });
    await this.txHost.tx.query(
      `DELETE FROM received_batches WHERE merchant_id = $1 AND id < (SELECT min(id) FROM (SELECT id FROM received_batches WHERE merchant_id = $1 ORDER BY id DESC LIMIT $2) AS newest)`,
      [batch.merchantId, MAX_PER_MERCHANT],
    );
  }

  async findByMerchantId(merchantId: string): Promise<ReceivedBatch[]> {
    const rows = await this.txHost.tx.find(ReceivedBatchEntity, { where: { merchantId }, order: { id: 'ASC' } });
    return rows.map((row) => ({ batchId: row.batchId, merchantId: row.merchantId, events: row.events, receivedAt: row.receivedAt.toISOString(), duplicate: row.duplicate }));
  }

  async hasBatch(merchantId: string, batchId: string): Promise<boolean> {
    return this.txHost.tx.existsBy(ReceivedBatchEntity, { merchantId, batchId });
  }
}
