import { Injectable } from '@nestjs/common';
import { DelayContext, OnDelayExpired } from 'nestjs-delay';
import { ORDER_AUTO_RATE } from './order-topics';
import { OrdersService } from './orders.service';

/**
 * The `order.auto-rate` handler on the postgres delay driver. The rating,
 * the buyer's loyalty credit (a ledger row, not idempotent) and the
 * action's completion are one commit: a run that fails or dies anywhere,
 * even after its last write, leaves none of them, and the retry makes the
 * credit once.
 */
@Injectable()
export class TransactionalAutoRateHandler {
  constructor(private readonly orders: OrdersService) {}

  @OnDelayExpired(ORDER_AUTO_RATE, { transactional: true })
  async onRatingWindowClosed({ key }: DelayContext): Promise<void> {
    await this.orders.rateIfUnrated(key);
  }
}
