import { Injectable } from '@nestjs/common';
import { Order, OrderStatus } from './order';

export interface OrderFilter {
  readonly buyerId?: string;
  readonly status?: OrderStatus;
}

/** In-memory orders. Orders are immutable values: a change is a save of a new one. */
@Injectable()
export class OrdersRepository {
  private readonly orders = new Map<string, Order>();

  findById(id: string): Order | undefined {
    return this.orders.get(id);
  }

  /** Oldest first. */
  findAll(filter: OrderFilter = {}): Order[] {
    return Array.from(this.orders.values()).filter(
      (order) => (filter.buyerId === undefined || order.buyerId === filter.buyerId) && (filter.status === undefined || order.status === filter.status),
    );
  }

  save(order: Order): void {
    this.orders.set(order.id, order);
  }

  delete(id: string): void {
    this.orders.delete(id);
  }
}
