import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import type { OrderEntity } from './order.entity';

/** A row of `order_lines`: a product, its quantity and its price when the order was placed. */
@Entity({ name: 'order_lines' })
export class OrderLineEntity {
  @PrimaryColumn({ name: 'order_id', type: 'uuid' })
  orderId!: string;

  /** The line's place in the order, from 0, so lines read back in the order they were given. */
  @PrimaryColumn({ name: 'line_no', type: 'integer' })
  lineNo!: number;

  @Column({ type: 'text' })
  sku!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ name: 'merchant_id', type: 'text' })
  merchantId!: string;

  @Column({ type: 'integer' })
  quantity!: number;

  @Column({ name: 'unit_price_cents', type: 'integer' })
  unitPriceCents!: number;

  @ManyToOne('OrderEntity', (order: OrderEntity) => order.lines, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'order_id' })
  order?: OrderEntity;
}
