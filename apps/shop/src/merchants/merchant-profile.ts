/** A merchant with its zone and when its next digest is due. */
export interface MerchantProfile {
  readonly id: string;
  readonly name: string;
  readonly timeZone: string;
  /** The next 09:00 in the merchant's zone; null for a moment after the zone is set (the next time is being worked out), or when the delay driver runs no recurring schedules. */
  readonly nextDigestAt: string | null;
}
