import { Module } from '@nestjs/common';
import { CatalogueModule } from '../catalogue/catalogue.module';
import { LoyaltyModule } from '../loyalty/loyalty.module';
import { OrderEventBus } from './order-event.bus';
import { ORDER_HANDLER_PROVIDERS } from './order-handlers.providers';
import { OrdersController } from './orders.controller';
import { OrdersRepository } from './orders.repository';
import { OrdersService } from './orders.service';

@Module({
  imports: [CatalogueModule, LoyaltyModule],
  controllers: [OrdersController],
  providers: [OrdersRepository, OrdersService, OrderEventBus, ...ORDER_HANDLER_PROVIDERS],
  exports: [OrderEventBus],
})
export class OrdersModule {}
