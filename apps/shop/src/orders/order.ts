export const ORDER_STATUSES = ['created', 'paid', 'shipped', 'delivered', 'rated', 'cancelled'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

export interface OrderLine {
  readonly sku: string;
  readonly name: string;
  readonly merchantId: string;
  readonly quantity: number;
  /** The price when the order was placed; later catalogue changes do not touch it. */
  readonly unitPriceCents: number;
}

export interface OrderRating {
  readonly stars: number;
  /** 'auto' when nobody rated in time and the shop gave 5 stars. */
  readonly by: 'buyer' | 'auto';
  readonly at: string;
}

export interface Order {
  readonly id: string;
  readonly buyerId: string;
  readonly lines: readonly OrderLine[];
  readonly totalCents: number;
  readonly status: OrderStatus;
  readonly createdAt: string;
  /** When an unpaid order will be cancelled. */
  readonly paymentDueAt?: string;
  readonly paidAt?: string;
  readonly shippedAt?: string;
  readonly deliveredAt?: string;
  /** When a delivered, unrated order will be rated 5 stars. */
  readonly autoRateAt?: string;
  readonly rating?: OrderRating;
  readonly cancelledAt?: string;
  readonly cancelReason?: 'unpaid';
}
