import { Injectable } from '@nestjs/common';
import { DelayContext, OnDelayExpired } from 'nestjs-delay';
import { ORDER_AUTO_RATE } from './order-topics';
import { OrdersService } from './orders.service';

@Injectable()
export class AutoRateHandler {
  constructor(private readonly orders: OrdersService) {}

  @OnDelayExpired(ORDER_AUTO_RATE)
  async onRatingWindowClosed({ key }: DelayContext): Promise<void> {
    await this.orders.rateIfUnrated(key);
  }
}
