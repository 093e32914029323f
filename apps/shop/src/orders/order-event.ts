import { OrderStatus } from './order';

export type OrderEventType = 'order.created' | 'order.paid' | 'order.shipped' | 'order.delivered' | 'order.rated' | 'order.cancelled';

/** Something that happened to an order, for other modules (the merchants' webhooks) to react to. */
export interface OrderEvent {
  readonly type: OrderEventType;
  readonly orderId: string;
  readonly status: OrderStatus;
  /** Every merchant with a line in the order. */
  readonly merchantIds: readonly string[];
  readonly at: string;
}
