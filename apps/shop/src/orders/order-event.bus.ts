import { Injectable, Logger } from '@nestjs/common';
import { OrderEvent } from './order-event';

export type OrderEventListener = (event: OrderEvent) => Promise<void>;

/**
 * Lets other modules hear about orders without the orders module knowing
 * them. Listeners are awaited inside the order change's transaction, so
 * what they write (a merchant's webhook event) commits with the change; a
 * listener that fails fails the change, which then rolls back whole rather
 * than commit without its events.
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
        this.logger.error(`A listener failed on ${event.type} of order "${event.orderId}", so the change is not made: ${error instanceof Error ? error.message : String(error)}`);
        throw error;
      }
    }
  }
}
