import { Logger } from '@nestjs/common';
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
import { RedisConnection } from './redis-connection';
import { RedisEpochWatch } from './redis-epoch-watch';
import { parseDeadRecord, storableTrace, toStoredAction } from './redis-envelope';
import { TopicKeys, topicKeys } from './redis-keys';
import { RedisTopicConsumer } from './redis-topic-consumer';
import { RedisWakeSubscriber } from './redis-wake-subscriber';
import { RedisTopicControl } from './redis-topic-control';
import { DriverHealth } from '../../interfaces/delay-health.interface';
import { TopicSummary } from '../../interfaces/topic-summary.interface';

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
  private readonly wakeCheckMs: number;
  private readonly epochWatch: RedisEpochWatch;
  private readonly control: RedisTopicControl;
  private readonly storeResetListeners: Array<(detail: string) => void> = [];
  private subscriber: RedisWakeSubscriber | undefined;
  private leaseTimer: NodeJS.Timeout | undefined;
  private epochTimer: NodeJS.Timeout | undefined;
  private renewing = false;
  /** Every consumer looks at Redis now: after a reconnect, claims that failed meanwhile are due again. */
  private readonly lookAgain = (): void => {
    for (const topicConsumer of this.consumers.values()) topicConsumer.kick();
  };

  constructor(config: RedisDriverConfig) {
    const replicas = config.waitForReplicas;
    this.connection = new RedisConnection(config, {
      commandTimeoutMs: parseDuration(config.commandTimeout ?? '5s'),
      replicas: replicas?.replicas ?? 0,
      replicasTimeoutMs: replicas ? parseDuration(replicas.timeout ?? '1s') : 0,
    });
    this.prefix = config.prefix ?? 'delay';
    this.leaseMs = parseDuration(config.lease ?? '30s');
    this.claimBatch = config.claimBatch ?? 100;
    this.wakeCheckMs = parseDuration(config.wakeCheck ?? '10s');
    this.control = new RedisTopicControl(this.connection, this.prefix, (topic) => this.keys(topic));
    this.epochWatch = new RedisEpochWatch(this.connection, `${this.prefix}:epoch`, (detail) => {
      for (const listener of this.storeResetListeners) listener(detail);
    });
  }

  /**
   * Opens the connection; bootstrap fails with DriverUnavailableError if Redis
   * cannot be reached (and every connection opened is closed again).
   */
  async connect(): Promise<void> {
    await this.connection.connect();
    await this.epochWatch.check();
    this.epochTimer = setInterval(() => void this.epochWatch.check(), this.wakeCheckMs);
    this.epochTimer.unref();
  }

  /** Told when Redis comes back without its data (see RedisEpochWatch). */
  onStoreReset(listener: (detail: string) => void): void {
    this.storeResetListeners.push(listener);
  }

  async schedule(command: ScheduleCommand): Promise<ScheduleResult> {
    const keys = this.keys(command.topic);
    const [mode, value] = dueArgs(command.due);
    const reply = await this.connection.write<Reply>(
      'schedule',
      [keys.due, keys.env, keys.active, keys.seq],
      [command.key, mode, value, command.payload ?? '', command.ifExists, command.maxPastMs, this.horizonMs, keys.wake, storableTrace(command.trace)],
    );
    const status = Number(reply[0]);
    if (status === 1 || status === 2) {
      // Armed: the script does not send the envelope back, everything in it is known here.
      const now = Number(reply[1]);
      this.clockSkew.value = now - Date.now();
      return { action: armedAction(command.topic, command.key, command.payload, dueAtOf(command.due, now)), outcome: status === 1 ? 'created' : 'replaced' };
    }
    this.checkStatus(reply, command.maxPastMs, command.due);
    if (status === -3) throw new ActionKindConflictError(command.topic, command.key, 'batch');
    return { action: toStoredAction(command.topic, command.key, String(reply[1]), Number(reply[3]) === 1, ''), outcome: 'kept' };
  }

  async scheduleMany(command: ScheduleManyCommand): Promise<ScheduleResult[]> {
    const keys = this.keys(command.topic);
    // One call is one request: the first entry's trace context stands for all of them.
    const args: Array<string | number> = [command.maxPastMs, this.horizonMs, keys.wake, storableTrace(command.entries[0]?.trace)];
    for (const entry of command.entries) args.push(entry.key, ...dueArgs(entry.due), entry.payload ?? '', entry.ifExists);
    const reply = await this.connection.write<Reply>('scheduleMany', [keys.due, keys.env, keys.active, keys.seq], args);
    const now = Number(reply[0]);
    this.clockSkew.value = now - Date.now();
    const code = Number(reply[1]);
    if (code < 0) {
      const entry = command.entries[Number(reply[2]) - 1];
      if (code === -3) throw new ActionKindConflictError(command.topic, entry.key, 'batch');
      this.checkStatus([code, reply[3], reply[0]], command.maxPastMs, entry.due);
    }
    // Statuses first, then the existing envelope of each kept entry, in entry order.
    let nextKept = 1 + command.entries.length;
    return command.entries.map((entry, n): ScheduleResult => {
      const status = Number(reply[1 + n]);
      if (status === 1 || status === 2) {
        return { action: armedAction(command.topic, entry.key, entry.payload, dueAtOf(entry.due, now)), outcome: status === 1 ? 'created' : 'replaced' };
      }
      return { action: toStoredAction(command.topic, entry.key, String(reply[nextKept++]), status === 4, ''), outcome: 'kept' };
    });
  }

  async cancel(topic: string, key: string): Promise<boolean> {
    const keys = this.keys(topic);
    return (await this.connection.write<number>('cancel', [keys.due, keys.env, keys.active], [key, keys.itemsPrefix])) === 1;
  }

  async reschedule(command: RescheduleCommand): Promise<StoredAction | null> {
    const keys = this.keys(command.topic);
    const [mode, value] = dueArgs(command.due);
    const reply = await this.connection.write<Reply>(
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
    const reply = await this.connection.run<Reply | null>('get', [keys.env, keys.active, keys.paused], [key, keys.itemsPrefix]);
    return reply ? toStoredAction(topic, key, String(reply[0]), Number(reply[1]) === 1, String(reply[2]), Number(reply[3]) === 1) : null;
  }

  async list(topic: string, page: Required<PageRequest>): Promise<StoredAction[]> {
    const keys = this.keys(topic);
    const reply = await this.connection.run<Reply>('list', [keys.due, keys.env, keys.active, keys.paused], [page.offset, page.limit, keys.itemsPrefix]);
    // The first element says whether the topic is paused; then four per action.
    const paused = Number(reply[0]) === 1;
    const actions: StoredAction[] = [];
    for (let n = 1; n < reply.length; n += 4) {
      actions.push(toStoredAction(topic, String(reply[n]), String(reply[n + 1]), Number(reply[n + 2]) === 1, String(reply[n + 3]), paused));
    }
    return actions;
  }

  async count(topic: string): Promise<number> {
    return this.connection.call('HLEN', (client) => client.hlen(this.keys(topic).env));
  }

  async listDead(topic: string, page: Required<PageRequest>): Promise<StoredDeadAction[]> {
    const keys = this.keys(topic);
    const members = await this.connection.call('ZRANGE', (client) => client.zrange(keys.deadIndex, page.offset, String(page.offset + page.limit - 1)));
    if (members.length === 0) return [];
    const records = await this.connection.call('HMGET', (client) => client.hmget(keys.dead, ...members));
    return members.flatMap((member, n) => {
      const record = records[n];
      return record === null ? [] : [parseDeadRecord(topic, member, record)];
    });
  }

  async countDead(topic: string): Promise<number> {
    return this.connection.call('ZCARD', (client) => client.zcard(this.keys(topic).deadIndex));
  }

  async redrive(topic: string, id: string): Promise<boolean> {
    const keys = this.keys(topic);
    const reply = await this.connection.write<number>('redrive', [keys.due, keys.env, keys.active, keys.seq, keys.dead, keys.deadIndex], [id, keys.wake, keys.itemsPrefix]);
    if (reply === -3) throw new ActionKindConflictError(topic, id, 'batch');
    return reply === 1;
  }

  async collect(command: CollectCommand): Promise<CollectResult> {
    const keys = this.keys(command.topic);
    const reply = await this.connection.write<Reply>(
      'collect',
      [keys.due, keys.env, keys.active, keys.seq],
      [command.key, command.item, command.windowMs, command.maxWaitMs ?? -1, command.slide ? '1' : '0', command.maxItems, keys.wake, keys.itemsPrefix, storableTrace(command.trace)],
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
        { topic, keys, concurrency, claimBatch: this.claimBatch, leaseMs: this.leaseMs, wakeCheckMs: this.wakeCheckMs },
        this.connection,
        consumer,
        this.inFlight,
        this.clockSkew,
      );
      this.consumers.set(topic, topicConsumer);
      byChannel.set(keys.wake, topicConsumer);
    }
    const wakes = new Map<string, (dueAt: number) => void>();
    for (const [channel, topicConsumer] of byChannel) wakes.set(channel, (dueAt) => topicConsumer.wake(dueAt));
    const lookAgain = this.lookAgain;
    this.subscriber = new RedisWakeSubscriber(this.connection, wakes, lookAgain, this.wakeCheckMs);
    await this.subscriber.start();
    // After the command connection comes back, claims that failed meanwhile are due again at once.
    this.connection.client.on('ready', lookAgain);
    this.leaseTimer = setInterval(() => void this.renewLeases(), Math.max(500, Math.floor(this.leaseMs / 3)));
  }

  async drain(timeoutMs: number): Promise<void> {
    for (const topicConsumer of this.consumers.values()) topicConsumer.stop();
    this.subscriber?.stop();
    this.subscriber = undefined;
    const emptied = await this.inFlight.whenEmpty(timeoutMs);
    if (!emptied) await this.releaseRunning();
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    this.leaseTimer = undefined;
  }

  async close(): Promise<void> {
    this.connection.client.off('ready', this.lookAgain);
    for (const topicConsumer of this.consumers.values()) topicConsumer.stop();
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    if (this.epochTimer) clearInterval(this.epochTimer);
    this.subscriber?.stop();
    this.subscriber = undefined;
    await this.connection.close();
  }

  pause(topic: string): Promise<boolean> {
    return this.control.pause(topic);
  }

  resume(topic: string): Promise<boolean> {
    return this.control.resume(topic);
  }

  isPaused(topic: string): Promise<boolean> {
    return this.control.isPaused(topic);
  }

  topics(): Promise<TopicSummary[]> {
    return this.control.topics();
  }

  runNow(topic: string, key: string): Promise<boolean> {
    return this.control.runNow(topic, key);
  }

  health(): Promise<DriverHealth> {
    return this.control.health(Array.from(this.consumers, ([topic, consumer]) => ({ topic, alive: consumer.alive })));
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

  private async renewLeases(): Promise<void> {
    // Each renewal is bounded by the command timeout; a slow one must not pile up behind the next tick.
    if (this.renewing) return;
    this.renewing = true;
    try {
      await this.renewEachTopic();
    } finally {
      this.renewing = false;
    }
  }

  private async renewEachTopic(): Promise<void> {
    for (const [topic, topicConsumer] of this.consumers) {
      if (!topicConsumer.holdsLeases) continue;
      const keys = this.keys(topic);
      const pairs = topicConsumer.leasePairs();
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

/** The due time a schedule script stored, from its `now`: it keeps whole ms (base 36 of the floor). */
function dueAtOf(due: DueSpec, now: number): number {
  return Math.floor('delayMs' in due ? now + due.delayMs : due.atMs);
}

/** What a schedule that armed stored: attempt 1, waiting, the payload as given ('' is no payload, as in an envelope). */
function armedAction(topic: string, key: string, payload: string | undefined, dueAt: number): StoredAction {
  return { topic, key, payload: payload === '' ? undefined : payload, dueAt, attempt: 1, state: 'waiting' };
}
