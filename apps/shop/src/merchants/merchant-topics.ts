/** Sends a merchant's collected events as one batch when it fires; keyed by merchant id. */
export const MERCHANT_WEBHOOK = 'merchant.webhook';

/** A merchant's daily digest: a recurring schedule per merchant (key: merchant id) at DIGEST_CRON in the merchant's zone. */
export const MERCHANT_DIGEST = 'merchant.digest';

/** 09:00 every day, local time: the day before is over everywhere in the zone, and the merchant's morning has begun. */
export const DIGEST_CRON = '0 9 * * *';
