import { Injectable } from '@nestjs/common';
import { DelayContext, OnDelayExpired } from 'nestjs-delay';
import { ORDER_UNPAID } from './order-topics';
import { OrdersService } from './orders.service';

/**
 * The `order.unpaid` handler on the postgres delay driver: each run is one
 * transaction (`transactional: true`, opened by `transactions.run` on the
 * shop's TypeORM connection) in which the order is cancelled, its stock
 * given back, its webhook events collected and the action completed. They
 * commit together or, on a throw, a timeout or a crash, not at all.
 */
@Injectable()
export class TransactionalUnpaidOrderHandler {
  constructor(private readonly orders: OrdersService) {}

  @OnDelayExpired(ORDER_UNPAID, { transactional: true })
  async onUnpaid({ key }: DelayContext): Promise<void> {
    // The service's @Transactional() joins the run's transaction (context.transaction, the same EntityManager).
    await this.orders.cancelIfUnpaid(key);
  }
}
