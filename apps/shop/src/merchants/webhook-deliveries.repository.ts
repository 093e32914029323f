import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { WebhookDelivery } from './webhook-delivery';
import { WebhookDeliveryEntity } from './webhook-delivery.entity';

/** Most attempts kept per merchant; the oldest go first, so a failing URL cannot grow the table forever. */
const MAX_PER_MERCHANT = 200;

/** The log of webhook attempts in `webhook_deliveries`, per merchant, oldest first. */
@Injectable()
export class WebhookDeliveriesRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** Records one attempt and drops the merchant's attempts beyond the newest MAX_PER_MERCHANT. */
  async record(delivery: WebhookDelivery): Promise<void> {
    await this.txHost.tx.insert(WebhookDeliveryEntity, {
      batchId: delivery.batchId,
      merchantId: delivery.merchantId,
      url: delivery.url,
      eventCount: delivery.eventCount,
      attempt: delivery.attempt,
      outcome: delivery.outcome,
      httpStatus: delivery.httpStatus ?? null,
      error: delivery.error ?? null,
      at: new Date(delivery.at),
    });
    await this.txHost.tx.query(
      `DELETE FROM webhook_deliveries WHERE merchant_id = $1 AND id < (SELECT min(id) FROM (SELECT id FROM webhook_deliveries WHERE merchant_id = $1 ORDER BY id DESC LIMIT $2) AS newest)`,
      [delivery.merchantId, MAX_PER_MERCHANT],
    );
  }

  async findByMerchantId(merchantId: string): Promise<WebhookDelivery[]> {
    const rows = await this.txHost.tx.find(WebhookDeliveryEntity, { where: { merchantId }, order: { id: 'ASC' } });
    return rows.map((row) => ({
      batchId: row.batchId,
      merchantId: row.merchantId,
      url: row.url,
      eventCount: row.eventCount,
      attempt: row.attempt,
      outcome: row.outcome,
      ...(row.httpStatus !== null ? { httpStatus: row.httpStatus } : {}),
      ...(row.error !== null ? { error: row.error } : {}),
      at: row.at.toISOString(),
    }));
  }
}
