/** A merchant's new token, shown once: the shop keeps only its digest. */
export interface IssuedMerchantToken {
  readonly merchantId: string;
  /** Send as `Authorization: Bearer <token>` to change or read the merchant's webhook subscription. */
  readonly token: string;
}
