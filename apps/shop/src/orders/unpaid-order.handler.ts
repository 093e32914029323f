import { Injectable } from '@nestjs/common';
import { DelayContext, OnDelayExpired } from 'nestjs-delay';
import { ORDER_UNPAID } from './order-topics';
import { OrdersService } from './orders.service';

/**
 * The `order.unpaid` handler on the wheel and Redis drivers, which cannot
 * run a handler in a transaction with its completion: the cancel commits in
 * a transaction of its own, and a run repeated after it (a crash before the
 * completion was recorded) finds the order cancelled and does nothing.
 */
@Injectable()
export class UnpaidOrderHandler {
  constructor(private readonly orders: OrdersService) {}

  @OnDelayExpired(ORDER_UNPAID)
  async onUnpaid({ key }: DelayContext): Promise<void> {
    await this.orders.cancelIfUnpaid(key);
  }
}
