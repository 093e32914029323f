import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import { ReceivedEvent } from './received-batch';

/** A row of `received_batches`: what the stand-in receiver got. */
@Entity({ name: 'received_batches' })
export class ReceivedBatchEntity {
  @PrimaryGeneratedColumn('identity', { type: 'bigint', generatedIdentity: 'ALWAYS' })
  id!: string;

  @Column({ name: 'batch_id', type: 'text' })
  batchId!: string;

  @Column({ name: 'merchant_id', type: 'text' })
  merchantId!: string;

  @Column({ type: 'jsonb' })
  events!: ReceivedEvent[];

  @Column({ name: 'received_at', type: 'timestamptz' })
  receivedAt!: Date;

  @Column({ type: 'boolean' })
  duplicate!: boolean;
}
