import { MerchantDigest } from '../merchants/merchant-digest';

/** A batch as the demo receiver recorded it. */
export interface ReceivedBatch {
  readonly batchId: string;
  readonly merchantId: string;
  readonly events: readonly ReceivedEvent[];
  /** The receiver's own wall-clock time: it plays a system outside the shop. */
  readonly receivedAt: string;
  /** True when this batchId had already arrived: a retry after a lost response. */
  readonly duplicate: boolean;
}

/** An order event (orderId, status) or a daily digest (digest), as received. */
export interface ReceivedEvent {
  readonly id: string;
  readonly type: string;
  readonly orderId?: string;
  readonly status?: string;
  readonly digest?: MerchantDigest;
  readonly at: string;
}
