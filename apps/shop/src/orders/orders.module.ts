import { Module } from '@nestjs/common';
import { CatalogueModule } from '../catalogue/catalogue.module';
import { AutoRateHandler } from './auto-rate.handler';
import { OrderEventBus } from './order-event.bus';
import { OrdersController } from './orders.controller';
import { OrdersRepository } from './orders.repository';
import { OrdersService } from './orders.service';
import { UnpaidOrderHandler } from './unpaid-order.handler';

@Module({
  imports: [CatalogueModule],
  controllers: [OrdersController],
  providers: [OrdersRepository, OrdersService, OrderEventBus, UnpaidOrderHandler, AutoRateHandler],
  exports: [OrderEventBus],
})
export class OrdersModule {}
