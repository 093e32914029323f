import { OrderEventType } from '../orders/order-event';
import { OrderStatus } from '../orders/order';
import { MerchantDigest } from './merchant-digest';

/** Something that happened to one of the merchant's orders. */
export interface OrderMerchantEvent {
  /** Unique per event, so a receiver can tell a retried batch from a new one. */
  readonly id: string;
  readonly type: OrderEventType;
  readonly orderId: string;
  readonly status: OrderStatus;
  readonly at: string;
}

/** The merchant's daily digest, sent the morning after the day it covers. */
export interface DigestMerchantEvent {
  /** The same for every sending of one digest (`digest:<merchant>:<local date>`), so a receiver can drop a repeat. */
  readonly id: string;
  readonly type: 'merchant.digest';
  readonly digest: MerchantDigest;
  readonly at: string;
}

/** One event in a merchant's webhook batch. */
export type MerchantEvent = OrderMerchantEvent | DigestMerchantEvent;

/** The JSON body POSTed to a merchant's URL. */
export interface WebhookBatch {
  /** The same on every retry of the same events. */
  readonly batchId: string;
  readonly merchantId: string;
  readonly events: readonly MerchantEvent[];
}
