/** Sends a merchant's collected events as one batch when it fires; keyed by merchant id. */
export const MERCHANT_WEBHOOK = 'merchant.webhook';
