import { MERCHANT_WEBHOOK } from '../merchants/merchant-topics';
import { ORDER_AUTO_RATE, ORDER_UNPAID } from '../orders/order-topics';
import { USER_OFFLINE } from '../presence/presence-topics';

/** Every topic the shop schedules, in the order the admin listing shows them. */
export const DELAY_TOPICS: readonly string[] = [ORDER_UNPAID, ORDER_AUTO_RATE, USER_OFFLINE, MERCHANT_WEBHOOK];
