import { Module } from '@nestjs/common';
import { OrdersModule } from '../orders/orders.module';
import { MerchantEventsCollector } from './merchant-events.collector';
import { MerchantsController } from './merchants.controller';
import { MerchantsRepository } from './merchants.repository';
import { WebhookBatchHandler } from './webhook-batch.handler';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository';
import { WebhookSender } from './webhook-sender';
import { WebhookSubscriptionsRepository } from './webhook-subscriptions.repository';
import { WebhooksService } from './webhooks.service';

@Module({
  imports: [OrdersModule],
  controllers: [MerchantsController],
  providers: [
    MerchantsRepository,
    WebhookSubscriptionsRepository,
    WebhookDeliveriesRepository,
    WebhooksService,
    WebhookSender,
    MerchantEventsCollector,
    WebhookBatchHandler,
  ],
})
export class MerchantsModule {}
