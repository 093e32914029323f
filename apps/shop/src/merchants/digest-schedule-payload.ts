/** What each occurrence of a merchant's digest schedule carries: the zone its 09:00 was computed in. */
export interface DigestSchedulePayload {
  readonly timeZone: string;
}
