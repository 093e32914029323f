/**
 * The ioredis connection settings the Redis driver passes on, described here
 * so that no ioredis type reaches the typings of an app that does not
 * install it. The driver then sets its own fail-fast and timeout settings.
 */
export interface RedisConnectionOptions {
  readonly host?: string;
  readonly port?: number;
  /** A Unix socket instead of host and port. */
  readonly path?: string;
  readonly username?: string;
  readonly password?: string;
  readonly db?: number;
  /** TLS settings as node's `tls.connect` takes them; `{}` for TLS with the defaults. */
  readonly tls?: object;
  readonly family?: number;
  /** The connection's name in `CLIENT LIST`. */
  readonly connectionName?: string;
  readonly connectTimeout?: number;
  /** ms between reconnect attempts, or null/undefined to stop trying. */
  readonly retryStrategy?: ((times: number) => number | void | null) | null;
  readonly sentinels?: ReadonlyArray<{ host?: string; port?: number }>;
  /** The master's name when `sentinels` are given. */
  readonly name?: string;
  readonly sentinelPassword?: string;
}

/**
 * An ioredis client you already have: `new Redis(...)` or `new Cluster(...)`
 * (ioredis 5 or 6). Only its shape is checked here, for the same reason.
 */
export interface RedisClientLike {
  readonly status: string;
  duplicate(...args: never[]): unknown;
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number }): void;
}
