import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A row of `merchants`, seeded by the first migration. */
@Entity({ name: 'merchants' })
export class MerchantEntity {
  @PrimaryColumn({ type: 'text' })
  id!: string;

  @Column({ type: 'text' })
  name!: string;
}
