import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DelayService } from 'nestjs-delay';
import { shopConfig } from '../config/shop.config';
import { ShopConfig } from '../config/shop-config.interface';
import { OrderEvent } from '../orders/order-event';
import { OrderEventBus } from '../orders/order-event.bus';
import { MerchantEvent } from './merchant-event';
import { MERCHANT_WEBHOOK } from './merchant-topics';
import { WebhookSubscriptionsRepository } from './webhook-subscriptions.repository';

/**
 * Turns order events into webhook events for each subscribed merchant in
 * the order; the daily digests add theirs with `add`. The library's
 * per-key batching does the rest: the first event for a merchant opens a
 * window, later ones join it, and the whole batch
 * reaches WebhookBatchHandler when the window closes (or it is full).
 * It runs inside the order change's transaction: on the postgres delay
 * driver an event is collected if and only if the change commits.
 */
@Injectable()
export class MerchantEventsCollector implements OnModuleInit {
  constructor(
    private readonly orderEvents: OrderEventBus,
    private readonly subscriptions: WebhookSubscriptionsRepository,
    private readonly delay: DelayService,
    @Inject(shopConfig.KEY) private readonly config: ShopConfig,
  ) {}

  onModuleInit(): void {
    this.orderEvents.subscribe((event) => this.collect(event));
  }

  private async collect(orderEvent: OrderEvent): Promise<void> {
    for (const merchantId of orderEvent.merchantIds) {
      // Nobody to send to: collecting would only fill a batch that is dropped.
      if (!(await this.subscriptions.findByMerchantId(merchantId))) continue;
      await this.add(merchantId, { id: randomUUID(), type: orderEvent.type, orderId: orderEvent.orderId, status: orderEvent.status, at: orderEvent.at });
    }
  }

  /** Adds one event to the merchant's next batch (an order's, or a daily digest). */
  async add(merchantId: string, event: MerchantEvent): Promise<void> {
    await this.delay.collect(MERCHANT_WEBHOOK, merchantId, event, { window: this.config.webhookWindowMs, maxItems: this.config.webhookMaxBatch });
  }
}
