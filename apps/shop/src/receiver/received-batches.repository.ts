import { Injectable } from '@nestjs/common';
import { ReceivedBatch } from './received-batch';

/** Most batches kept per merchant, so a long demo cannot grow memory forever. */
const MAX_PER_MERCHANT = 200;

/** In-memory record of what the demo receiver got, per merchant, in arrival order. */
@Injectable()
export class ReceivedBatchesRepository {
  private readonly batches = new Map<string, ReceivedBatch[]>();

  record(batch: ReceivedBatch): void {
    const received = this.batches.get(batch.merchantId) ?? [];
    received.push(batch);
    if (received.length > MAX_PER_MERCHANT) received.splice(0, received.length - MAX_PER_MERCHANT);
    this.batches.set(batch.merchantId, received);
  }

  findByMerchantId(merchantId: string): ReceivedBatch[] {
    return [...(this.batches.get(merchantId) ?? [])];
  }

  hasBatch(merchantId: string, batchId: string): boolean {
    return (this.batches.get(merchantId) ?? []).some((batch) => batch.batchId === batchId);
  }
}
