import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A row of `products`. The CHECK on `stock` keeps it from ever going below zero, whatever the code does. */
@Entity({ name: 'products' })
export class ProductEntity {
  @PrimaryColumn({ type: 'text' })
  sku!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ name: 'merchant_id', type: 'text' })
  merchantId!: string;

  @Column({ name: 'price_cents', type: 'integer' })
  priceCents!: number;

  @Column({ type: 'integer' })
  stock!: number;
}
