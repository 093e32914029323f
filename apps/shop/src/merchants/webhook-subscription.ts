export interface WebhookSubscription {
  readonly merchantId: string;
  /** Where batches are POSTed as JSON. */
  readonly url: string;
  readonly subscribedAt: string;
}
