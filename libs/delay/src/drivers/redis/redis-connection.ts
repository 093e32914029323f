import IORedis, { Cluster, Redis, RedisOptions } from 'ioredis';
import { DriverUnavailableError } from '../../errors/driver-unavailable.error';
import { RedisDriverConfig } from '../../interfaces/delay-module-options.interface';
import { describeError } from '../../utils/describe-error';
import { REDIS_SCRIPTS, RedisScriptName } from './redis-scripts.generated';

export type RedisClient = Redis | Cluster;
type ScriptCall = (...args: Array<string | number>) => Promise<unknown>;

/**
 * Fail fast while Redis is away: a call is rejected at once with a
 * DriverUnavailableError instead of waiting in a queue, and a command lost
 * with its connection is not silently re-sent later.
 */
const FAIL_FAST: RedisOptions = {
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
  maxRetriesPerRequest: 1,
  lazyConnect: true,
};

/** Reply errors that mean "not now" rather than "wrong". */
const TRANSIENT_REPLY = /^(LOADING|BUSY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|READONLY)/;

/** The command connection: owns the client unless the user gave one, and runs the scripts. */
export class RedisConnection {
  readonly client: RedisClient;
  private readonly owned: boolean;

  constructor(config: RedisDriverConfig) {
    if (config.client) {
      this.client = config.client as RedisClient;
      this.owned = false;
    } else {
      this.client = config.url ? new IORedis(config.url, FAIL_FAST) : new IORedis({ ...(config.options as RedisOptions), ...FAIL_FAST });
      this.owned = true;
    }
    // ioredis logs unhandled 'error' events loudly; the driver reports failures through its calls instead.
    // A client the user gave stays as they set it up, their own listeners included.
    if (this.owned) this.client.on('error', () => undefined);
    for (const script of Object.values(REDIS_SCRIPTS)) {
      this.client.defineCommand(script.command, { numberOfKeys: script.numberOfKeys, lua: script.lua });
    }
  }

  async connect(): Promise<void> {
    if (this.client.status === 'wait') {
      try {
        await this.client.connect();
      } catch (error) {
        throw new DriverUnavailableError(`cannot connect to Redis: ${describeError(error)}`, error);
      }
    }
  }

  /** A second connection for pub/sub, configured like the first, connected. */
  async duplicate(): Promise<RedisClient> {
    const subscriber = (this.client as Redis).duplicate() as RedisClient;
    subscriber.on('error', () => undefined);
    if (subscriber.status === 'wait') await subscriber.connect();
    return subscriber;
  }

  async run<T>(name: RedisScriptName, keys: string[], args: Array<string | number>): Promise<T> {
    const call = (this.client as unknown as Record<string, ScriptCall>)[REDIS_SCRIPTS[name].command];
    try {
      return (await call.call(this.client, ...keys, ...args)) as T;
    } catch (error) {
      if (isReplyError(error) && !TRANSIENT_REPLY.test(error.message)) throw error;
      throw new DriverUnavailableError(`Redis did not answer ${name}: ${describeError(error)}`, error);
    }
  }

  async close(): Promise<void> {
    if (!this.owned) return;
    await this.client.quit().catch(() => this.client.disconnect());
  }
}


/** Redis answered, with an error: a bug or bad data, not an outage. */
function isReplyError(error: unknown): error is Error {
  return error instanceof Error && error.name === 'ReplyError';
}
