import { Injectable, Logger } from '@nestjs/common';
import { OrderEvent } from './order-event';

export type OrderEventListener = (event: OrderEvent) => Promise<void>;

/**
 * Lets other modules hear about orders without the orders module knowing
 * them. Listeners are awaited, so once a request is answered its event has
 * been handled; a failing listener is logged and never fails the order
 * change that has already happened.
 */
@Injectable()
export class OrderEventBus {
  private readonly logger = new Logger(OrderEventBus.name);
  private readonly listeners: OrderEventListener[] = [];

  subscribe(listener: OrderEventListener): void {
    this.listeners.push(listener);
  }

  async publish(event: OrderEvent): Promise<void> {
    for (const listener of this.listeners) {
      try {
        await listener(event);
      } catch (error) {
        this.logger.error(`A listener failed on ${event.type} of order "${event.orderId}": ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  }
}
