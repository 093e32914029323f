import { DelayClock } from '../time/clock';
import { Duration } from '../time/duration';
import { DelayDriver } from './delay-driver.interface';
import { DelayHandlerOptions } from './delay-handler-options.interface';
import { RedisClientLike, RedisConnectionOptions } from './redis-client.interface';
import { DelayTransactionOptions } from './delay-transaction.interface';
import { PgPoolLike } from './postgres-pool.interface';

/** The in-memory driver (the default). */
export interface WheelDriverConfig {
  readonly type: 'wheel';
  /** Precision: an action fires at most one tick after its due time. Default 100 ms. */
  readonly tickMs?: number;
}

/**
 * The durable driver: sorted sets and Lua scripts on Redis (ioredis). Give
 * one of `url`, `options` or `client`; with none, it connects to
 * redis://localhost:6379.
 */
export interface RedisDriverConfig {
  readonly type: 'redis';
  /** e.g. 'redis://localhost:6379/0'. */
  readonly url?: string;
  /** ioredis options (host, port, password, tls, ...). */
  readonly options?: RedisConnectionOptions;
  /**
   * An existing ioredis client or Cluster. The driver duplicates it for its
   * subscriber connection and leaves it open at shutdown: it is yours.
   */
  readonly client?: RedisClientLike;
  /** Prefix of every key, so several apps can share one Redis. Default 'delay'. */
  readonly prefix?: string;
  /** How long a claimed action is leased to this instance; running handlers renew it. Default '30s'. */
  readonly lease?: Duration;
  /**
   * The lease of runs on a recurring topic (ticks and occurrences), at most
   * `lease`: its instance renews it every fifth of it. An occurrence whose
   * instance stopped (killed, crashed) is taken back this soon, as its next
   * attempt, and then no longer holds the schedule back (overlap 'skip',
   * 'bufferOne'); a live instance whose renewals all stall this long (a
   * blocked event loop) has its occurrence run again (at least once). At
   * least 1s. Default '5s'.
   */
  readonly recurringLease?: Duration;
  /** Most actions claimed in one round trip. Default 100. */
  readonly claimBatch?: number;
  /**
   * Every call to Redis settles within this time: it resolves, or rejects
   * with DriverUnavailableError, whatever the network does. A connection
   * that leaves a call unanswered this long, and then a PING too, is
   * dropped and opened again. Default '5s'.
   */
  readonly commandTimeout?: Duration;
  /**
   * Durability across a failover: schedule, scheduleMany, reschedule,
   * cancel, collect and redrive resolve only once `replicas` replicas have
   * the change (Redis WAIT), else reject with DriverUnavailableError (the
   * change may then be on the master only). Off by default: without it, a
   * failover to a replica that missed the last writes loses them.
   */
  readonly waitForReplicas?: { readonly replicas: number; readonly timeout?: Duration };
  /**
   * How often an instance looks at its topics even when no wake-up message
   * came (a pub/sub message can be lost with its connection), checks that
   * its pub/sub connection still answers, and checks that Redis did not
   * come back empty. Default '10s'.
   */
  readonly wakeCheck?: Duration;
  /**
   * How many shards each topic's actions are spread over. Each shard has its
   * own hash tag, so on a Redis Cluster a topic's load spreads over the
   * masters instead of one core; on a single Redis, shards only spread keys.
   * A key always lands in the same shard. Default 1 (one hash tag per topic,
   * as before shards existed). Changing it while actions are pending loses
   * nothing: see the README, "Sharding a hot topic".
   */
  readonly shards?: number;
  /** Per-topic shard counts that override `shards`, e.g. `{ 'order.unpaid': 8 }`. */
  readonly topicShards?: Readonly<Record<string, number>>;
}

/**
 * The transactional driver: a few tables in a schema of its own on
 * PostgreSQL (node-postgres, `pg`). Its writes can join your own database
 * transaction (`{ transaction }` on schedule, cancel, ...), so an action is
 * stored if and only if your transaction commits. Give `connectionString`
 * or `pool`.
 */
export interface PostgresDriverConfig {
  readonly type: 'postgres';
  /** e.g. 'postgres://user:secret@db:5432/app'. The driver opens a pool of its own (and one connection for LISTEN). */
  readonly connectionString?: string;
  /**
   * Your own `pg.Pool`. The driver borrows a client per call and keeps one
   * for LISTEN for as long as it runs (count it in the pool's `max`); it
   * leaves the pool open at shutdown: it is yours.
   */
  readonly pool?: PgPoolLike;
  /** The schema of the driver's tables. Default 'nestjs_delay'. */
  readonly schema?: string;
  /**
   * Create and upgrade the driver's tables at startup (under a transaction-level
   * advisory lock, so instances starting together do it once). Set false when
   * your migrations run elsewhere: `postgresMigrations(schema)` gives the SQL.
   * Default true.
   */
  readonly migrate?: boolean;
  /** How long a claimed action is leased to this instance; running handlers renew it. Default '30s'. */
  readonly lease?: Duration;
  /**
   * The lease of runs on a recurring topic (ticks and occurrences), at most
   * `lease`: its instance renews it every fifth of it. An occurrence whose
   * instance stopped (killed, crashed) is taken back this soon, as its next
   * attempt, and then no longer holds the schedule back (overlap 'skip',
   * 'bufferOne'); a live instance whose renewals all stall this long (a
   * blocked event loop) has its occurrence run again (at least once). At
   * least 1s. Default '5s'.
   */
  readonly recurringLease?: Duration;
  /** Most actions claimed in one statement. Default 100, and 256 on a topic of recurring schedules. */
  readonly claimBatch?: number;
  /**
   * Every call to PostgreSQL settles within this time: it resolves, or
   * rejects with DriverUnavailableError (on its own pool, the connection is
   * closed and the server cancels the statement). Default '5s'.
   */
  readonly commandTimeout?: Duration;
  /**
   * How often an instance looks at its topics even when no notification
   * came (one can be lost with its connection), and checks that its LISTEN
   * connection still answers. Default '10s'.
   */
  readonly wakeCheck?: Duration;
  /**
   * 'transaction' when connections go through a pooler in transaction mode
   * (PgBouncer `pool_mode = transaction`): no LISTEN is possible there, so
   * instances look every `wakeCheck` for actions other instances armed
   * (their own arming still wakes them at once); lower `wakeCheck`
   * accordingly. Default 'session'.
   */
  readonly pooler?: 'session' | 'transaction';
  /**
   * While it consumes, each instance vacuums the driver's busiest tables
   * (actions, claims, recurring series) once they hold 1,000 dead rows,
   * looking every second: every run and claim leaves dead rows where the
   * next claims look, and autovacuum visits a database once a minute by
   * default. Only tables the driver's role owns (or has its owner's
   * privileges on), or on PostgreSQL 17+ holds MAINTAIN on; a table another
   * vacuum is working on is skipped. One
   * instance's vacuums of a table take at most a twentieth of one server
   * process. Set false to leave it all to autovacuum. Default true.
   */
  readonly vacuum?: boolean;
}

/** `driver` is one of the built-in drivers by config, or any DelayDriver instance. */
export type DelayDriverConfig = WheelDriverConfig | RedisDriverConfig | PostgresDriverConfig | DelayDriver;

export interface DelayModuleOptions {
  /** Default `{ type: 'wheel' }`. */
  readonly driver?: DelayDriverConfig;
  /** The clock of the wheel driver; a VirtualClock in tests. Default: the system clock. */
  readonly clock?: DelayClock;
  /** Defaults for every @OnDelayExpired handler; each handler may override them. */
  readonly defaults?: DelayHandlerOptions;
  /** Largest payload, and largest collected item, as JSON bytes. Default 65536. */
  readonly maxPayloadBytes?: number;
  /** Most items in one batch (collect). Default 1000. */
  readonly maxBatchItems?: number;
  /**
   * Largest batch (collect), in bytes: its items' JSON plus a few bytes of
   * framing per item. An item that would take an open batch past it is
   * refused with BatchTooLargeError. Default 4 MiB (4194304), or
   * maxPayloadBytes if that is larger; at least maxPayloadBytes.
   */
  readonly maxBatchBytes?: number;
  /** How far in the past an absolute `at` may be (it then fires at once). Default '1d'. */
  readonly maxPast?: Duration;
  /** How long shutdown waits for running handlers. Default '10s'. */
  readonly shutdownTimeout?: Duration;
  /**
   * How long a schedule declared by `@Recurring` (orphan policy `'remove'`)
   * goes on once no running instance declares it any more; then its next
   * tick removes it. Each instance renews its declarations every third of
   * this. Longer than a rolling deploy's pause between instances; at least
   * '1s'. Default '10m'.
   */
  readonly recurringOrphanGrace?: Duration;
  /** Set false on an instance that only schedules and must run no handler. Default true. */
  readonly consume?: boolean;
  /** How writes join your database transactions (postgres driver only): extra adapters and the ambient transaction. */
  readonly transactions?: DelayTransactionOptions;
}
