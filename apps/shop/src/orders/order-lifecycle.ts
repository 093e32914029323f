import { IllegalTransitionError } from './illegal-transition.error';
import { Order, ORDER_STATUSES, OrderStatus } from './order';

/** created → paid → shipped → delivered → rated, and created → cancelled. Nothing leaves rated or cancelled. */
const NEXT: Readonly<Record<OrderStatus, readonly OrderStatus[]>> = {
  created: ['paid', 'cancelled'],
  paid: ['shipped'],
  shipped: ['delivered'],
  delivered: ['rated'],
  rated: [],
  cancelled: [],
};

export function canMove(order: Order, to: OrderStatus): boolean {
  return NEXT[order.status].includes(to);
}

export function assertCanMove(order: Order, to: OrderStatus): void {
  if (canMove(order, to)) return;
  const allowedFrom = ORDER_STATUSES.filter((status) => NEXT[status].includes(to));
  throw new IllegalTransitionError(order.id, order.status, to, allowedFrom);
}
