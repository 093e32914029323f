import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A row of `merchant_tokens`: the SHA-256 digest of a merchant's current token, never the token. */
@Entity({ name: 'merchant_tokens' })
export class MerchantTokenEntity {
  @PrimaryColumn({ name: 'merchant_id', type: 'text' })
  merchantId!: string;

  @Column({ type: 'bytea' })
  digest!: Buffer;

  @Column({ name: 'issued_at', type: 'timestamptz' })
  issuedAt!: Date;
}
