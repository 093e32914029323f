import { Injectable } from '@nestjs/common';
import { DelayContext, OnDelayExpired } from 'nestjs-delay';
import { ORDER_UNPAID } from './order-topics';
import { OrdersService } from './orders.service';

@Injectable()
export class UnpaidOrderHandler {
  constructor(private readonly orders: OrdersService) {}

  @OnDelayExpired(ORDER_UNPAID)
  async onUnpaid({ key }: DelayContext): Promise<void> {
    await this.orders.cancelIfUnpaid(key);
  }
}
