import { Module } from '@nestjs/common';
import { OrdersModule } from '../orders/orders.module';
import { DigestSchedules } from './digest-schedules';
import { HostResolver } from './host-resolver';
import { MerchantDigestHandler } from './merchant-digest.handler';
import { MerchantDigestsRepository } from './merchant-digests.repository';
import { MerchantDigestsService } from './merchant-digests.service';
import { MerchantEventsCollector } from './merchant-events.collector';
import { MerchantTokenGuard } from './merchant-token.guard';
import { MerchantTokensRepository } from './merchant-tokens.repository';
import { MerchantsController } from './merchants.controller';
import { MerchantsRepository } from './merchants.repository';
import { MerchantsService } from './merchants.service';
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
    MerchantsService,
    DigestSchedules,
    MerchantDigestsRepository,
    MerchantDigestsService,
    MerchantDigestHandler,
  ],
  exports: [WebhooksService, MerchantsService],
})
export class MerchantsModule {}
