import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A row of `user_presence`: one per user ever seen. */
@Entity({ name: 'user_presence' })
export class UserPresenceEntity {
  @PrimaryColumn({ name: 'user_id', type: 'text' })
  userId!: string;

  @Column({ type: 'boolean' })
  online!: boolean;

  @Column({ name: 'last_seen_at', type: 'timestamptz' })
  lastSeenAt!: Date;

  @Column({ name: 'offline_due_at', type: 'timestamptz', nullable: true })
  offlineDueAt!: Date | null;

  @Column({ name: 'offline_since', type: 'timestamptz', nullable: true })
  offlineSince!: Date | null;
}
