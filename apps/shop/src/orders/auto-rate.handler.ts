import { Injectable } from '@nestjs/common';
import { DelayContext, OnDelayExpired } from 'nestjs-delay';
import { ORDER_AUTO_RATE } from './order-topics';
import { OrdersService } from './orders.service';

/**
 * The `order.auto-rate` handler on the wheel and Redis drivers: the rating
 * and the loyalty credit commit in a transaction of their own, before the
 * completion is recorded. A repeated run finds the order rated and credits
 * nothing: the credit is made once only because it rides on that status
 * check.
 */
@Injectable()
export class AutoRateHandler {
  constructor(private readonly orders: OrdersService) {}

  @OnDelayExpired(ORDER_AUTO_RATE)
  async onRatingWindowClosed({ key }: DelayContext): Promise<void> {
    await this.orders.rateIfUnrated(key);
  }
}
