import { ConflictError } from '../common/errors/conflict.error';
import { OrderStatus } from './order';

export class IllegalTransitionError extends ConflictError {
  constructor(
    readonly orderId: string,
    readonly from: OrderStatus,
    readonly to: OrderStatus,
    allowedFrom: readonly OrderStatus[],
  ) {
    super(`Order "${orderId}" is ${from}; it cannot be ${to} (only an order that is ${allowedFrom.join(' or ')} can)`);
  }
}
