import { Matches } from 'class-validator';

export class MerchantParams {
  @Matches(/^[a-z0-9-]{1,64}$/, { message: 'merchantId must be 1 to 64 lowercase letters, digits or "-"' })
  readonly merchantId!: string;
}
