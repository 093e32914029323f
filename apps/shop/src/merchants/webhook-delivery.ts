/** One attempt to POST one batch, as the merchant's delivery log shows it. */
export interface WebhookDelivery {
  readonly batchId: string;
  readonly merchantId: string;
  readonly url: string;
  readonly eventCount: number;
  readonly attempt: number;
  readonly outcome: 'delivered' | 'failed';
  readonly httpStatus?: number;
  readonly error?: string;
  readonly at: string;
}
