import { OrderEventType } from '../orders/order-event';
import { OrderStatus } from '../orders/order';

/** One event in a merchant's webhook batch. */
export interface MerchantEvent {
  /** Unique per event, so a receiver can tell a retried batch from a new one. */
  readonly id: string;
  readonly type: OrderEventType;
  readonly orderId: string;
  readonly status: OrderStatus;
  readonly at: string;
}

/** The JSON body POSTed to a merchant's URL. */
export interface WebhookBatch {
  /** The same on every retry of the same events. */
  readonly batchId: string;
  readonly merchantId: string;
  readonly events: readonly MerchantEvent[];
}
