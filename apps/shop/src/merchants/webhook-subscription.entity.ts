import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A row of `webhook_subscriptions`: at most one URL per merchant. */
@Entity({ name: 'webhook_subscriptions' })
export class WebhookSubscriptionEntity {
  @PrimaryColumn({ name: 'merchant_id', type: 'text' })
  merchantId!: string;

  @Column({ type: 'text' })
  url!: string;

  @Column({ name: 'subscribed_at', type: 'timestamptz' })
  subscribedAt!: Date;
}
