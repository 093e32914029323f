import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** A row of `webhook_deliveries`: one attempt to POST one batch. */
@Entity({ name: 'webhook_deliveries' })
export class WebhookDeliveryEntity {
  /** bigint: node-postgres reads it as a string. */
  @PrimaryGeneratedColumn('identity', { type: 'bigint', generatedIdentity: 'ALWAYS' })
  id!: string;

  @Column({ name: 'batch_id', type: 'text' })
  batchId!: string;

  @Column({ name: 'merchant_id', type: 'text' })
  merchantId!: string;

  @Column({ type: 'text' })
  url!: string;

  @Column({ name: 'event_count', type: 'integer' })
  eventCount!: number;

  @Column({ type: 'integer' })
  attempt!: number;

  @Column({ type: 'text' })
  outcome!: 'delivered' | 'failed';

  @Column({ name: 'http_status', type: 'integer', nullable: true })
  httpStatus!: number | null;

  @Column({ type: 'text', nullable: true })
  error!: string | null;

  @Column({ type: 'timestamptz' })
  at!: Date;
}
