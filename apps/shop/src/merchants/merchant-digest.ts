/** What a merchant sold on one local day: built once, the morning after, at 09:00 in its zone. */
export interface MerchantDigest {
  readonly merchantId: string;
  /** The merchant's local date the digest covers, YYYY-MM-DD. */
  readonly localDate: string;
  /** The zone the day was taken in. */
  readonly timeZone: string;
  /** The day's first instant and the next day's first (23 or 25 hours apart when the clocks change). */
  readonly from: string;
  readonly to: string;
  /** Orders paid that day with at least one line of the merchant. */
  readonly ordersCount: number;
  /** What those lines of the merchant's came to. */
  readonly revenueCents: number;
  /** The occurrence this digest was built for: 09:00 local on the day after. */
  readonly scheduledAt: string;
  readonly builtAt: string;
}
