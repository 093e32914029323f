import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A row of `merchants`: the demo ones seeded by the first migration, more created by an admin. */
@Entity({ name: 'merchants' })
export class MerchantEntity {
  @PrimaryColumn({ type: 'text' })
  id!: string;

  @Column({ type: 'text' })
  name!: string;

  /** IANA name; the merchant's daily digest is sent at 09:00 there. */
  @Column({ name: 'time_zone', type: 'text' })
  timeZone!: string;
}
