import { FactoryProvider } from '@nestjs/common';
import { shopConfig } from '../config/shop.config';
import { ShopConfig } from '../config/shop-config.interface';
import { AutoRateHandler } from './auto-rate.handler';
import { OrdersService } from './orders.service';
import { TransactionalAutoRateHandler } from './transactional-auto-rate.handler';
import { TransactionalUnpaidOrderHandler } from './transactional-unpaid-order.handler';
import { UnpaidOrderHandler } from './unpaid-order.handler';

/**
 * The orders' action handlers, chosen by DELAY_DRIVER when the app is
 * built: on postgres the transactional ones (each run one commit with the
 * action's completion); on the wheel and Redis, which refuse a transactional
 * handler at bootstrap, the ones that commit on their own and rely on the
 * order's status to make a repeated run do nothing. The delay module finds
 * the handler through the instance's class, so only the one built here is
 * registered.
 */
export const ORDER_HANDLER_PROVIDERS: FactoryProvider[] = [
  {
    provide: 'UNPAID_ORDER_HANDLER',
    inject: [shopConfig.KEY, OrdersService],
    useFactory: (config: ShopConfig, orders: OrdersService): TransactionalUnpaidOrderHandler | UnpaidOrderHandler =>
      config.delayDriver === 'postgres' ? new TransactionalUnpaidOrderHandler(orders) : new UnpaidOrderHandler(orders),
  },
  {
    provide: 'AUTO_RATE_HANDLER',
    inject: [shopConfig.KEY, OrdersService],
    useFactory: (config: ShopConfig, orders: OrdersService): TransactionalAutoRateHandler | AutoRateHandler =>
      config.delayDriver === 'postgres' ? new TransactionalAutoRateHandler(orders) : new AutoRateHandler(orders),
  },
];
