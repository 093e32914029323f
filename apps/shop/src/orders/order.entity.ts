import { Column, Entity, OneToMany, PrimaryColumn } from 'typeorm';
import type { OrderStatus } from './order';
import { OrderLineEntity } from './order-line.entity';

/** A row of `orders`; its lines are in `order_lines`. */
@Entity({ name: 'orders' })
export class OrderEntity {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  /** Placement order (an identity column the database fills), for "oldest first" even when two orders share a timestamp. */
  @Column({ type: 'bigint', insert: false, update: false })
  seq!: string;

  @Column({ name: 'buyer_id', type: 'text' })
  buyerId!: string;

  @Column({ type: 'text' })
  status!: OrderStatus;

  @Column({ name: 'total_cents', type: 'integer' })
  totalCents!: number;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'payment_due_at', type: 'timestamptz', nullable: true })
  paymentDueAt!: Date | null;

  @Column({ name: 'paid_at', type: 'timestamptz', nullable: true })
  paidAt!: Date | null;

  @Column({ name: 'shipped_at', type: 'timestamptz', nullable: true })
  shippedAt!: Date | null;

  @Column({ name: 'delivered_at', type: 'timestamptz', nullable: true })
  deliveredAt!: Date | null;

  @Column({ name: 'auto_rate_at', type: 'timestamptz', nullable: true })
  autoRateAt!: Date | null;

  @Column({ name: 'rating_stars', type: 'smallint', nullable: true })
  ratingStars!: number | null;

  @Column({ name: 'rating_by', type: 'text', nullable: true })
  ratingBy!: 'buyer' | 'auto' | null;

  @Column({ name: 'rated_at', type: 'timestamptz', nullable: true })
  ratedAt!: Date | null;

  @Column({ name: 'cancelled_at', type: 'timestamptz', nullable: true })
  cancelledAt!: Date | null;

  @Column({ name: 'cancel_reason', type: 'text', nullable: true })
  cancelReason!: 'unpaid' | null;

  @OneToMany(() => OrderLineEntity, (line) => line.order)
  lines!: OrderLineEntity[];
}
