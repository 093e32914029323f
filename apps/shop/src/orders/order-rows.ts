import { Order, OrderLine } from './order';
import { OrderLineEntity } from './order-line.entity';
import { OrderEntity } from './order.entity';

/** An `orders` row and its lines as the API shows them: ISO times, absent fields left out. */
export function toOrder(row: OrderEntity, lines: readonly OrderLineEntity[]): Order {
  return {
    id: row.id,
    buyerId: row.buyerId,
    lines: [...lines].sort((a, b) => a.lineNo - b.lineNo).map(toOrderLine),
    totalCents: row.totalCents,
    status: row.status,
    createdAt: row.createdAt.toISOString(),
    ...optional('paymentDueAt', row.paymentDueAt),
    ...optional('paidAt', row.paidAt),
    ...optional('shippedAt', row.shippedAt),
    ...optional('deliveredAt', row.deliveredAt),
    ...optional('autoRateAt', row.autoRateAt),
    ...(row.ratingStars !== null && row.ratingBy !== null && row.ratedAt !== null ? { rating: { stars: row.ratingStars, by: row.ratingBy, at: row.ratedAt.toISOString() } } : {}),
    ...optional('cancelledAt', row.cancelledAt),
    ...(row.cancelReason !== null ? { cancelReason: row.cancelReason } : {}),
  };
}

/** The columns of an order (all but `seq`, which the database assigns). */
export function toOrderRow(order: Order): Omit<OrderEntity, 'seq' | 'lines'> {
  return {
    id: order.id,
    buyerId: order.buyerId,
    status: order.status,
    totalCents: order.totalCents,
    createdAt: new Date(order.createdAt),
    paymentDueAt: dateOrNull(order.paymentDueAt),
    paidAt: dateOrNull(order.paidAt),
    shippedAt: dateOrNull(order.shippedAt),
    deliveredAt: dateOrNull(order.deliveredAt),
    autoRateAt: dateOrNull(order.autoRateAt),
    ratingStars: order.rating?.stars ?? null,
    ratingBy: order.rating?.by ?? null,
    ratedAt: dateOrNull(order.rating?.at),
    cancelledAt: dateOrNull(order.cancelledAt),
    cancelReason: order.cancelReason ?? null,
  };
}

export function toOrderLineRows(order: Order): Array<Omit<OrderLineEntity, 'order'>> {
  return order.lines.map((line, lineNo) => ({ orderId: order.id, lineNo, ...line }));
}

function toOrderLine(row: OrderLineEntity): OrderLine {
  return { sku: row.sku, name: row.name, merchantId: row.merchantId, quantity: row.quantity, unitPriceCents: row.unitPriceCents };
}

function optional<K extends string>(key: K, value: Date | null): Partial<Record<K, string>> {
  return value === null ? {} : ({ [key]: value.toISOString() } as Record<K, string>);
}

function dateOrNull(iso: string | undefined): Date | null {
  return iso === undefined ? null : new Date(iso);
}
