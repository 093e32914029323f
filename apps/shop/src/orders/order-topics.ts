/** Cancels an order still unpaid when it fires; keyed by order id. */
export const ORDER_UNPAID = 'order.unpaid';
/** Rates a delivered, unrated order 5 stars when it fires; keyed by order id. */
export const ORDER_AUTO_RATE = 'order.auto-rate';
