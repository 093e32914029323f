import { Logger } from '@nestjs/common';
import IORedis, { Cluster, Redis, RedisOptions } from 'ioredis';
import { DriverUnavailableError } from '../../errors/driver-unavailable.error';
import { describeError } from '../../utils/describe-error';
import { settleWithin } from '../../utils/settle-within';
import { RedisReplicatedWriter } from './redis-replicated-writer';
import { REDIS_SCRIPTS, RedisScriptName } from './redis-scripts.generated';
import { RedisClient } from './redis-client';
import { RedisScriptCalls } from './redis-script-calls';
import { RedisSocketWatch } from './redis-socket-watch';

type ScriptCall = (...args: Array<string | number>) => Promise<unknown>;

export interface RedisConnectionSettings {
  /** Every call settles within this many ms, whatever the network does. */
  readonly commandTimeoutMs: number;
  /** Writes resolve only once this many replicas confirmed them (WAIT); 0 for none. */
  readonly replicas: number;
  readonly replicasTimeoutMs: number;
}
/**
 * Fail fast while Redis is away: a call is rejected at once with a
 * DriverUnavailableError instead of waiting in a queue, and a command lost
 * with its connection is not silently re-sent later (it may have run: the
 * caller decides). ioredis drops such a command at the next reconnect
 * without settling it: RedisSocketWatch fails it when its socket closes.
 * A silent peer (no close) is what the time bound covers.
 */
const FAIL_FAST: RedisOptions = {
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
  maxRetriesPerRequest: 1,
  lazyConnect: true,
};

/** Reply errors that mean "not now" rather than "wrong". */
const TRANSIENT_REPLY = /^(LOADING|BUSY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|READONLY|NOREPLICAS)/;

/**
 * The command connection: owns the client unless the user gave one, runs the
 * scripts, and guarantees that every call settles within the command timeout.
 * A call that times out makes the connection suspect: if it does not answer
 * a PING either, it is dropped and opened again, so a silently dead socket
 * (a reset the client never saw, a NAT that forgot us) heals by itself.
 */
export class RedisConnection {
  readonly client: RedisClient;
  private readonly logger = new Logger(RedisConnection.name);
  private readonly owned: boolean;
  private checking = false;
  /** Set when writes must be confirmed by replicas. */
  private writer: RedisReplicatedWriter | undefined;
  private closed = false;
  /** Sends what a caller gathered to send later (RedisScheduler), before any other command. */
  /** What gatherers hold, sent before any other command (beforeSend). */
  private readonly gatherers: Array<() => void> = [];
  private readonly pendingSends = (): void => {
    for (const send of this.gatherers) send();
  };
  /** The sockets corked in this tick, uncorked at its end; undefined when none is. */
  private corked: Array<{ uncork(): void }> | undefined;
  /** Fails the calls in flight on the client's socket when it closes, instead of at the time bound. */
  private readonly watch: RedisSocketWatch;
  /** Script calls built directly, when the client allows it (see RedisScriptCalls); undefined: through its own methods. */
  private readonly scriptCalls: RedisScriptCalls | undefined;

  constructor(
    source: { url?: string; options?: object; client?: object },
    readonly settings: RedisConnectionSettings,
  ) {
    if (source.client) {
      this.client = source.client as RedisClient;
      this.owned = false;
    } else {
      const options: RedisOptions = { connectTimeout: settings.commandTimeoutMs, keepAlive: 10_000, ...(source.options as RedisOptions), ...FAIL_FAST };
      this.client = source.url ? new IORedis(source.url, options) : new IORedis(options);
      this.owned = true;
    }
    // ioredis logs unhandled 'error' events loudly; the driver reports failures through its calls instead.
    // A client the user gave stays as they set it up, their own listeners included.
    if (this.owned) this.client.on('error', () => undefined);
    this.watch = new RedisSocketWatch(this.client);
    for (const script of Object.values(REDIS_SCRIPTS)) {
      this.client.defineCommand(script.command, { numberOfKeys: script.numberOfKeys, lua: script.lua });
    }
    this.scriptCalls = RedisScriptCalls.of(this.client, Object.values(REDIS_SCRIPTS).map((script) => script.command));
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Connects (within the command timeout), and opens the connection for
   * replica-confirmed writes when `replicas` is set; on failure every
   * connection opened is closed again, so the process can exit.
   */
  async connect(): Promise<void> {
    try {
      if (this.client.status === 'wait') await this.bounded('connect', this.client.connect());
      if (this.settings.replicas > 0 && !this.writer) {
        const writer = new RedisReplicatedWriter(this, this.settings.replicas, this.settings.replicasTimeoutMs);
        await writer.connect();
        this.writer = writer;
      }
    } catch (error) {
      if (this.owned) this.client.disconnect();
      throw new DriverUnavailableError(`cannot connect to Redis: ${describeError(error)}`, error);
    }
  }

  /**
   * A second connection, configured like the first, connected within the
   * command timeout. For pub/sub, ioredis's own re-subscribe after a
   * reconnect is turned off: it leaves its SUBSCRIBE's rejection unhandled
   * when the connection drops again at once; the wake subscriber
   * re-subscribes itself, bounded (a Cluster subscribes on its own socket).
   */
  async duplicate(forPubSub = false): Promise<RedisClient> {
    const subscriber = (
      forPubSub && !this.client.isCluster ? (this.client as Redis).duplicate({ autoResubscribe: false }) : (this.client as Redis).duplicate()
    ) as RedisClient;
    subscriber.on('error', () => undefined);
    if (subscriber.status === 'wait') {
      try {
        await this.bounded('connect', subscriber.connect());
      } catch (error) {
        subscriber.disconnect();
        throw error;
      }
    }
    return subscriber;
  }

  /**
   * `send` is called before every command: a caller that holds commands
   * back to gather them (RedisScheduler and RedisSeriesSteps, until the end of a tick) sends them
   * then, so commands still reach Redis in the order they were made.
   */
  beforeSend(send: () => void): void {
    this.gatherers.push(send);
  }

  /**
   * Sends what every other gatherer holds: called by a gatherer as it takes
   * a call, so the calls made before it in other gatherers leave first (two
   * gatherers flushed at the end of a tick would otherwise go in the order
   * their flushes run, not the order of the calls).
   */
  sendGatheredBefore(gatherer: () => void): void {
    for (const send of this.gatherers) if (send !== gatherer) send();
  }

  /** Runs a script that only reads or that the consumer retries by itself. */
  run<T>(name: RedisScriptName, keys: string[], args: Array<string | number>): Promise<T> {
    this.pendingSends();
    return this.bounded(name, this.watch.track(name, this.send(REDIS_SCRIPTS[name].command, keys, args) as Promise<T>));
  }

  /**
   * Sends a script call; the calls issued in the same tick leave in one
   * socket write. With many calls in flight, one write per command costs
   * about a third of the client's CPU. The socket is corked at the first call
   * of a tick and uncorked at its end: each command is still an ordinary
   * command, settled by its own reply as soon as that arrives (a pipeline
   * would hold every reply until the last), with its own error and its own
   * time bound (run/write wrap it in bounded()). On a Cluster every node's
   * socket is corked, so each node gets one write. ioredis'
   * enableAutoPipelining is not used: it keeps one pipeline in flight per
   * connection and makes the next wait for the whole reply of the previous.
   */
  private send(command: string, keys: string[], args: Array<string | number>): Promise<unknown> {
    if (this.corked === undefined) this.cork();
    const direct = this.scriptCalls?.send(command, keys, args);
    if (direct) return direct;
    const call = (this.client as unknown as Record<string, ScriptCall>)[command];
    return call.call(this.client, ...keys, ...args);
  }

  private cork(): void {
    const sockets: Array<{ uncork(): void }> = [];
    const nodes: Redis[] = this.client.isCluster ? (this.client as Cluster).nodes('all') : [this.client as Redis];
    for (const node of nodes) {
      // A socket that is not there yet (connecting, or reconnecting) has nothing to hold back.
      const stream = (node as unknown as { stream?: { cork?: () => void; uncork?: () => void } }).stream;
      if (stream?.cork === undefined || stream.uncork === undefined) continue;
      stream.cork();
      sockets.push(stream as { uncork(): void });
    }
    this.corked = sockets;
    process.nextTick(this.uncork);
  }

  private readonly uncork = (): void => {
    const sockets = this.corked ?? [];
    this.corked = undefined;
    for (const socket of sockets) socket.uncork();
  };

  /**
   * Runs a script that changes what the caller was promised (schedule,
   * cancel...). With `replicas` set, it resolves only once that many replicas
   * have the change too (RedisReplicatedWriter), so a failover cannot undo
   * an acknowledged call.
   */
  write<T>(name: RedisScriptName, keys: string[], args: Array<string | number>): Promise<T> {
    this.pendingSends();
    if (!this.writer) return this.run(name, keys, args);
    return this.writer.write<T>(name, keys, args);
  }

  /** Any other command, with the same bound: `send` gets the client. */
  call<T>(what: string, send: (client: RedisClient) => Promise<T>): Promise<T> {
    this.pendingSends();
    let sent: Promise<T>;
    try {
      sent = send(this.client);
    } catch (error) {
      return Promise.reject(this.toError(what, error));
    }
    return this.bounded(what, this.watch.track(what, sent));
  }

  /** Resolves once the client is connected and ready, or after `withinMs` (whichever comes first); never rejects. */
  whenReady(withinMs: number): Promise<void> {
    if (this.client.status === 'ready') return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.client.off('ready', done);
        resolve();
      };
      const timer = setTimeout(done, withinMs);
      this.client.on('ready', done);
    });
  }

  async close(): Promise<void> {
    // Calls made before close go out before QUIT, as they would have without gathering.
    this.pendingSends();
    this.closed = true;
    this.writer?.close();
    if (this.owned) await this.bounded('quit', this.client.quit()).catch(() => this.client.disconnect());
    // A client the user gave is left as it was found: without the driver's listener.
    this.watch.stop();
  }

  /**
   * Settles within the command timeout (plus `extraMs`), whatever happens to
   * `promise`: a reply that never comes becomes a DriverUnavailableError, and
   * a late one is ignored.
   */
  bounded<T>(what: string, promise: Promise<T>, extraMs = 0, suspectOnTimeout = true): Promise<T> {
    const limit = this.settings.commandTimeoutMs + extraMs;
    return settleWithin(
      promise,
      limit,
      () => {
        if (suspectOnTimeout) this.suspect();
        return new DriverUnavailableError(`Redis did not answer ${what} within ${limit} ms (option commandTimeout)`);
      },
      (error) => this.toError(what, error),
    );
  }

  /** A call went unanswered: if a PING goes unanswered too, the socket is dead though it looks open; open a new one. */
  private suspect(): void {
    if (this.checking || this.closed || !this.owned) return;
    this.checking = true;
    const ping = this.client.ping();
    const timer = setTimeout(() => {
      this.checking = false;
      if (this.closed) return;
      this.logger.warn(`Redis did not answer a PING within ${this.settings.commandTimeoutMs} ms: reconnecting`);
      this.client.disconnect(true);
    }, this.settings.commandTimeoutMs);
    ping.then(
      () => {
        clearTimeout(timer);
        this.checking = false;
      },
      () => {
        // A PING refused at once (no connection): ioredis is reconnecting already.
        clearTimeout(timer);
        this.checking = false;
      },
    );
  }

  toError(what: string, error: unknown): Error {
    if (error instanceof DriverUnavailableError) return error;
    // Redis answered with an error: a bug or bad data, not an outage.
    if (isReplyError(error) && !TRANSIENT_REPLY.test(error.message)) return error;
    return new DriverUnavailableError(`Redis did not answer ${what}: ${describeError(error)}`, error);
  }
}

function isReplyError(error: unknown): error is Error {
  return error instanceof Error && error.name === 'ReplyError';
}
