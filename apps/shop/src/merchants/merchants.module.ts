import { Module } from '@nestjs/common';
import { OrdersModule } from '../orders/orders.module';
import { HostResolver } from './host-resolver';
import { MerchantEventsCollector } from './merchant-events.collector';
import { MerchantTokenGuard } from './merchant-token.guard';
import { MerchantTokensRepository } from './merchant-tokens.repository';
import { MerchantsController } from './merchants.controller';
import { MerchantsRepository } from './merchants.repository';
import { WebhookAddressPolicy } from './webhook-address-policy';
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
    MerchantTokensRepository,
    MerchantTokenGuard,
    HostResolver,
    WebhookAddressPolicy,
    WebhooksService,
    WebhookSender,
    MerchantEventsCollector,
    WebhookBatchHandler,
  ],
  exports: [WebhooksService],
})
export class MerchantsModule {}
