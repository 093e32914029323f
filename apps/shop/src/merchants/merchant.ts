export interface Merchant {
  readonly id: string;
  readonly name: string;
  /** IANA name, e.g. "Europe/Paris": the merchant's days, for its daily digest at 09:00 local time. */
  readonly timeZone: string;
}
