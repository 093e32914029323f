/** Everything the shop reads from its environment, parsed and checked once at startup. */
export interface ShopConfig {
  readonly port: number;
  /**
   * The PostgreSQL server of the shop's data (orders, stock, presence,
   * merchants). Unset: main.ts starts an embedded PostgreSQL with its data
   * in .data/shop-postgres and sets this to it before the app is built.
   */
  readonly databaseUrl: string | undefined;
  /** Where the pending actions live: the shop's own database (postgres), Redis, or memory (wheel). */
  readonly delayDriver: DelayDriverKind;
  /** Set: the Redis driver, so pending actions survive restarts and are shared by instances. Unset: the in-memory wheel. */
  readonly redisUrl: string | undefined;
  /** Prefix of the Redis driver's keys, so several shops (or test runs) can share one Redis. Unset: the library's default. */
  readonly redisPrefix: string | undefined;
  /** Password for the admin page's buttons (redrive, cancel, run now, pause, resume). Unset: the page is read-only. */
  readonly adminToken: string | undefined;
  /** How long a created order may stay unpaid before it is cancelled. */
  readonly unpaidTimeoutMs: number;
  /** How long after delivery a buyer may rate before the order is rated 5 stars. */
  readonly autoRateAfterMs: number;
  /** Silence after the last heartbeat before a user is shown offline. */
  readonly offlineAfterMs: number;
  /** How long a claimed action belongs to an instance (Redis and postgres): a crashed instance's actions run again after it. */
  readonly delayLeaseMs: number;
  /** How long a merchant's first event waits for others to join its batch. */
  readonly webhookWindowMs: number;
  /** A batch is sent as soon as it holds this many events, window or not. */
  readonly webhookMaxBatch: number;
  /** Special-purpose networks (loopback, private...) webhooks may reach after all. Empty: public addresses only. */
  readonly webhookAllowedNetworks: readonly AllowedNetwork[];
}

export const DELAY_DRIVER_KINDS = ['postgres', 'redis', 'wheel'] as const;
export type DelayDriverKind = (typeof DELAY_DRIVER_KINDS)[number];

/** One entry of WEBHOOK_ALLOWED_NETWORKS. */
export interface AllowedNetwork {
  readonly address: string;
  readonly prefix: number;
  readonly family: 'ipv4' | 'ipv6';
}
