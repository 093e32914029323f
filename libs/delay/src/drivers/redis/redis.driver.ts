import { Logger } from '@nestjs/common';
import { DriverUnavailableError } from '../../errors/driver-unavailable.error';
import { DueTimeOutOfRangeError } from '../../errors/due-time-out-of-range.error';
import { ActionKindConflictError } from '../../errors/action-kind-conflict.error';
import {
  CollectCommand,
  CollectResult,
  DelayConsumer,
  DelayDriver,
  DueSpec,
  RescheduleCommand,
  ScheduleCommand,
  ScheduleManyCommand,
  ScheduleResult,
  StoredAction,
  StoredDeadAction,
} from '../../interfaces/delay-driver.interface';
import { RedisDriverConfig } from '../../interfaces/delay-module-options.interface';
import { PageRequest } from '../../interfaces/pending-action.interface';
import { parseDuration } from '../../time/duration';
import { DEFAULT_HORIZON_MS } from '../../validation/due-time';
import { InFlightTracker } from '../in-flight-tracker';
import { describeError } from '../../utils/describe-error';
import { RedisClient, RedisConnection } from './redis-connection';
import { parseDeadRecord, toStoredAction } from './redis-envelope';
import { TopicKeys, topicKeys } from './redis-keys';
import { RedisTopicConsumer } from './redis-topic-consumer';

type Reply = Array<string | number>;

/**
 * The durable driver. Per topic: a due ZSET, an envelope HASH, an active
 * ZSET of leases and a dead set, all under one hash tag; every change is one
 * Lua script, and every time is the Redis server's.
 *
 * Guarantees: survives process restarts (and Redis restarts with AOF);
 * at-least-once, and in normal operation exactly one instance runs each
 * action; a crashed instance's runs are redone once their lease expires.
 */
export class RedisDriver implements DelayDriver {
  readonly name = 'redis';
  readonly horizonMs = DEFAULT_HORIZON_MS;

  private readonly logger = new Logger(RedisDriver.name);
  private readonly connection: RedisConnection;
  private readonly prefix: string;
  private readonly leaseMs: number;
  private readonly claimBatch: number;
  private readonly keysByTopic = new Map<string, TopicKeys>();
  private readonly consumers = new Map<string, RedisTopicConsumer>();
  private readonly inFlight = new InFlightTracker();
  private readonly clockSkew = { value: 0 };
  private subscriber: RedisClient | undefined;
  private leaseTimer: NodeJS.Timeout | undefined;

  constructor(config: RedisDriverConfig) {
    this.connection = new RedisConnection(config);
    this.prefix = config.prefix ?? 'delay';
    this.leaseMs = parseDuration(config.lease ?? '30s');
    this.claimBatch = config.claimBatch ?? 100;
  }

  /** Opens the connection; bootstrap fails with DriverUnavailableError if Redis cannot be reached. */
  async connect(): Promise<void> {
    await this.connection.connect();
  }

  async schedule(command: ScheduleCommand): Promise<ScheduleResult> {
    const keys = this.keys(command.topic);
    const [mode, value] = dueArgs(command.due);
    const reply = await this.connection.run<Reply>(
      'schedule',
      [keys.due, keys.env, keys.active, keys.seq],
      [command.key, mode, value, command.payload ?? '', command.ifExists, command.maxPastMs, this.horizonMs, keys.wake],
    );
    const status = this.checkStatus(reply, command.maxPastMs, command.due);
    if (status === -3) throw new ActionKindConflictError(command.topic, command.key, 'batch');
    const outcome = status === 1 ? 'created' : status === 2 ? 'replaced' : 'kept';
    return { action: toStoredAction(command.topic, command.key, String(reply[1]), Number(reply[3]) === 1, ''), outcome };
  }

  async scheduleMany(command: ScheduleManyCommand): Promise<ScheduleResult[]> {
    const keys = this.keys(command.topic);
    const args: Array<string | number> = [command.maxPastMs, this.horizonMs, keys.wake];
    for (const entry of command.entries) args.push(entry.key, ...dueArgs(entry.due), entry.payload ?? '', entry.ifExists);
    const reply = await this.connection.run<Reply>('scheduleMany', [keys.due, keys.env, keys.active, keys.seq], args);
    this.clockSkew.value = Number(reply[0]) - Date.now();
    const code = Number(reply[1]);
    if (code < 0) {
      const entry = command.entries[Number(reply[2]) - 1];
      if (code === -3) throw new ActionKindConflictError(command.topic, entry.key, 'batch');
      this.checkStatus([code, reply[3], reply[0]], command.maxPastMs, entry.due);
    }
    return command.entries.map((entry, n) => {
      const status = Number(reply[1 + n * 3]);
      return {
        action: toStoredAction(command.topic, entry.key, String(reply[2 + n * 3]), Number(reply[3 + n * 3]) === 1, ''),
        outcome: status === 1 ? 'created' : status === 2 ? 'replaced' : 'kept',
      };
    });
  }

  async cancel(topic: string, key: string): Promise<boolean> {
    const keys = this.keys(topic);
    return (await this.connection.run<number>('cancel', [keys.due, keys.env, keys.active], [key, keys.itemsPrefix])) === 1;
  }

  async reschedule(command: RescheduleCommand): Promise<StoredAction | null> {
    const keys = this.keys(command.topic);
    const [mode, value] = dueArgs(command.due);
    const reply = await this.connection.run<Reply>(
      'reschedule',
      [keys.due, keys.env, keys.active, keys.seq],
      [command.key, mode, value, command.maxPastMs, this.horizonMs, keys.wake],
    );
    const status = this.checkStatus(reply, command.maxPastMs, command.due);
    if (status === -3) throw new ActionKindConflictError(command.topic, command.key, 'batch');
    if (status === 0) return null;
    return toStoredAction(command.topic, command.key, String(reply[1]), false, '');
  }

  async get(topic: string, key: string): Promise<StoredAction | null> {
    const keys = this.keys(topic);
    const reply = await this.connection.run<Reply | null>('get', [keys.env, keys.active], [key, keys.itemsPrefix]);
    return reply ? toStoredAction(topic, key, String(reply[0]), Number(reply[1]) === 1, String(reply[2])) : null;
  }

  async list(topic: string, page: Required<PageRequest>): Promise<StoredAction[]> {
    const keys = this.keys(topic);
    const reply = await this.connection.run<Reply>('list', [keys.due, keys.env, keys.active], [page.offset, page.limit, keys.itemsPrefix]);
    const actions: StoredAction[] = [];
    for (let n = 0; n < reply.length; n += 4) {
      actions.push(toStoredAction(topic, String(reply[n]), String(reply[n + 1]), Number(reply[n + 2]) === 1, String(reply[n + 3])));
    }
    return actions;
  }

  async count(topic: string): Promise<number> {
    return this.command(() => this.connection.client.hlen(this.keys(topic).env));
  }

  async listDead(topic: string, page: Required<PageRequest>): Promise<StoredDeadAction[]> {
    const keys = this.keys(topic);
    const members = await this.command(() => this.connection.client.zrange(keys.deadIndex, page.offset, String(page.offset + page.limit - 1)));
    if (members.length === 0) return [];
    const records = await this.command(() => this.connection.client.hmget(keys.dead, ...members));
    return members.flatMap((member, n) => {
      const record = records[n];
      return record === null ? [] : [parseDeadRecord(topic, member, record)];
    });
  }

  async countDead(topic: string): Promise<number> {
    return this.command(() => this.connection.client.zcard(this.keys(topic).deadIndex));
  }

  async redrive(topic: string, id: string): Promise<boolean> {
    const keys = this.keys(topic);
    const reply = await this.connection.run<number>('redrive', [keys.due, keys.env, keys.active, keys.seq, keys.dead, keys.deadIndex], [id, keys.wake, keys.itemsPrefix]);
    if (reply === -3) throw new ActionKindConflictError(topic, id, 'batch');
    return reply === 1;
  }

  async collect(command: CollectCommand): Promise<CollectResult> {
    const keys = this.keys(command.topic);
    const reply = await this.connection.run<Reply>(
      'collect',
      [keys.due, keys.env, keys.active, keys.seq],
      [command.key, command.item, command.windowMs, command.maxWaitMs ?? -1, command.slide ? '1' : '0', command.maxItems, keys.wake, keys.itemsPrefix],
    );
    const status = Number(reply[0]);
    if (status === -3) throw new ActionKindConflictError(command.topic, command.key, 'action');
    this.clockSkew.value = Number(reply[3]) - Date.now();
    return { size: Number(reply[1]), dueAt: Number(reply[2]), outcome: status === 1 ? 'opened' : status === 2 ? 'joined' : 'flushed' };
  }

  async start(consumer: DelayConsumer): Promise<void> {
    if (consumer.topics.size === 0) return;
    const byChannel = new Map<string, RedisTopicConsumer>();
    for (const [topic, concurrency] of consumer.topics) {
      const keys = this.keys(topic);
      const topicConsumer = new RedisTopicConsumer(
        { topic, keys, concurrency, claimBatch: this.claimBatch, leaseMs: this.leaseMs },
        this.connection,
        consumer,
        this.inFlight,
        this.clockSkew,
      );
      this.consumers.set(topic, topicConsumer);
      byChannel.set(keys.wake, topicConsumer);
    }
    const subscriber = await this.connection.duplicate();
    this.subscriber = subscriber;
    subscriber.on('message', (channel: string, message: string) => byChannel.get(channel)?.wake(Number(message)));
    // After a reconnect, wakes sent meanwhile were lost, so every topic looks again once it is subscribed again
    // (ioredis emits 'ready' before it re-subscribes). The first connection's 'ready' came inside duplicate().
    subscriber.on('ready', () => {
      const lookAgain = (): void => {
        for (const topicConsumer of this.consumers.values()) topicConsumer.kick();
      };
      subscriber.subscribe(...byChannel.keys()).then(lookAgain, lookAgain);
    });
    await subscriber.subscribe(...byChannel.keys());
    for (const topicConsumer of this.consumers.values()) topicConsumer.kick();
    this.leaseTimer = setInterval(() => void this.renewLeases(), Math.max(500, Math.floor(this.leaseMs / 3)));
  }

  async drain(timeoutMs: number): Promise<void> {
    for (const topicConsumer of this.consumers.values()) topicConsumer.stop();
    if (this.subscriber) {
      this.subscriber.disconnect();
      this.subscriber = undefined;
    }
    const emptied = await this.inFlight.whenEmpty(timeoutMs);
    if (!emptied) await this.releaseRunning();
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    this.leaseTimer = undefined;
  }

  async close(): Promise<void> {
    for (const topicConsumer of this.consumers.values()) topicConsumer.stop();
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    this.subscriber?.disconnect();
    await this.connection.close();
  }

  // ---- helpers ---------------------------------------------------------

  private keys(topic: string): TopicKeys {
    let keys = this.keysByTopic.get(topic);
    if (!keys) {
      keys = topicKeys(this.prefix, topic);
      this.keysByTopic.set(topic, keys);
    }
    return keys;
  }

  /** Turns a script's range refusal into the same typed error the wheel throws. */
  private checkStatus(reply: Reply, maxPastMs: number, due: DueSpec): number {
    const status = Number(reply[0]);
    // Lua prints numbers to 14 digits: an absolute time is reported as it was asked for.
    const dueAt = 'atMs' in due ? due.atMs : Number(reply[1]);
    if (status === -1) throw new DueTimeOutOfRangeError(dueAt, `more than ${maxPastMs} ms in the past (option maxPast)`);
    if (status === -2) throw new DueTimeOutOfRangeError(dueAt, `beyond the driver's horizon of ${this.horizonMs} ms from now`);
    this.clockSkew.value = Number(reply[2]) - Date.now();
    return status;
  }

  private async command<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw new DriverUnavailableError(`Redis did not answer: ${describeError(error)}`, error);
    }
  }

  private async renewLeases(): Promise<void> {
    for (const [topic, topicConsumer] of this.consumers) {
      if (topicConsumer.running.size === 0) continue;
      const keys = this.keys(topic);
      const pairs = topicConsumer.memberTokenPairs();
      await this.connection.run('extend', [keys.env, keys.active], [this.leaseMs, ...pairs]).catch((error: unknown) => {
        this.logger.warn(`Could not renew leases: ${describeError(error)}`);
      });
    }
  }

  /** Shutdown timed out: hand the runs still going back to Redis so another instance takes them now. */
  private async releaseRunning(): Promise<void> {
    for (const [topic, topicConsumer] of this.consumers) {
      if (topicConsumer.running.size === 0) continue;
      const keys = this.keys(topic);
      const pairs = topicConsumer.memberTokenPairs();
      const released = await this.connection
        .run<number>('release', [keys.due, keys.env, keys.active, keys.seq], [keys.wake, ...pairs])
        .catch((error: unknown) => {
          this.logger.warn(`Could not hand running actions back (their leases will expire instead): ${describeError(error)}`);
          return 0;
        });
      this.logger.warn(`Shutdown timed out: ${released} running action(s) of "${topic}" handed back to Redis`);
    }
  }
}

function dueArgs(due: DueSpec): ['delay' | 'at', number] {
  return 'delayMs' in due ? ['delay', due.delayMs] : ['at', due.atMs];
}
