import { Logger } from '@nestjs/common';
import { ActionKindConflictError } from '../../errors/action-kind-conflict.error';
import { BatchTooLargeError } from '../../errors/batch-too-large.error';
import {
  AdvanceSeriesCommand,
  AdvanceSeriesResult,
  SeriesBlocker,
  SeriesPageRequest,
  SeriesRunRecord,
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
import { untilDeadline } from '../until-deadline';
import { LeaseRenewals } from '../lease-renewals';
import { readSkippedOccurrence } from '../series-blocker-field';
import { describeError } from '../../utils/describe-error';
import { claimsSettled } from '../claim-in-flight';
import { RedisConnection } from './redis-connection';
import { RedisEpochWatch } from './redis-epoch-watch';
import { RedisEvictionPolicy } from './redis-eviction-policy';
import { keyOfMember, storableTrace, toStoredAction } from './redis-envelope';
import { TopicKeys } from './redis-keys';
import { RedisTopicConsumer } from './redis-topic-consumer';
import { RedisActionQueries } from './redis-action-queries';
import { ClaimBudget } from './redis-claim-budget';
import { LayoutView, RedisTopicLayouts } from './redis-topic-layouts';
import { TopicLayout } from './redis-topic-layout';
import { RedisWakeSubscriber } from './redis-wake-subscriber';
import { RedisTopicControl } from './redis-topic-control';
import { dueArgs, pushDue, refusal, RedisScheduler } from './redis-scheduler';
import { RedisSeriesSteps } from './redis-series-steps';
import { DriverHealth } from '../../interfaces/delay-health.interface';
import { TopicSummary } from '../../interfaces/topic-summary.interface';
import { quoteInput } from '../../utils/quote-input';

type Reply = Array<string | number>;

/**
 * The durable driver. Per topic (per shard of a topic spread over several):
 * a due ZSET, an envelope HASH, an active ZSET of leases and a dead set,
 * all under one hash tag; every change is one Lua script on one shard, and
 * every time is the Redis server's.
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
  private readonly leases: LeaseRenewals;
  private leaseTimerMs = 0;
  private readonly claimBatch: number;
  /** Shard → its consumer in this process (by the shard's envelope key, unique per shard). */
  private readonly consumers = new Map<string, RedisTopicConsumer>();
  /** Topics consumed here → their handler slots, shared by the consumers of their shards. */
  private readonly budgets = new Map<string, ClaimBudget>();
  private handlerSink: DelayConsumer | undefined;
  private readonly inFlight = new InFlightTracker();
  private readonly clockSkew = { value: 0 };
  private readonly wakeCheckMs: number;
  private readonly epochWatch: RedisEpochWatch;
  private readonly layouts: RedisTopicLayouts;
  private readonly queries: RedisActionQueries;
  private readonly control: RedisTopicControl;
  private readonly scheduler: RedisScheduler;
  private readonly steps: RedisSeriesSteps;
  private readonly storeResetListeners: Array<(detail: string) => void> = [];
  /** What the startup check found wrong with Redis's maxmemory-policy, if anything. */
  private evicting: string | undefined;
  private subscriber: RedisWakeSubscriber | undefined;
  private leaseTimer: NodeJS.Timeout | undefined;
  private epochTimer: NodeJS.Timeout | undefined;
  /** Every consumer looks at Redis now: after a reconnect, claims that failed meanwhile are due again. */
  private readonly lookAgain = (): void => {
    for (const topicConsumer of this.consumers.values()) topicConsumer.kick();
  };

  constructor(config: RedisDriverConfig) {
    const replicas = config.waitForReplicas;
    const commandTimeoutMs = parseDuration(config.commandTimeout ?? '5s');
    this.connection = new RedisConnection(config, {
      commandTimeoutMs,
      replicas: replicas?.replicas ?? 0,
      replicasTimeoutMs: replicas ? parseDuration(replicas.timeout ?? '1s') : 0,
    });
    this.prefix = config.prefix ?? 'delay';
    this.leaseMs = parseDuration(config.lease ?? '30s');
    this.leases = new LeaseRenewals(this.leaseMs, config.recurringLease);
    this.claimBatch = config.claimBatch ?? 100;
    this.wakeCheckMs = parseDuration(config.wakeCheck ?? '10s');
    const shards = config.shards ?? 1;
    const topicShards = config.topicShards ?? {};
    // A count is forgotten once no instance announced it for three check periods and the slowest possible announcement.
    const staleAfterMs = 3 * this.wakeCheckMs + 2 * commandTimeoutMs;
    this.layouts = new RedisTopicLayouts(
      this.connection,
      this.prefix,
      (topic) => topicShards[topic] ?? shards,
      staleAfterMs,
      this.wakeCheckMs,
      (topic, view, previous) => this.layoutsChanged(topic, view, previous),
      (topic, view) => this.carryPauseOver(topic, view),
    );
    this.queries = new RedisActionQueries(this.connection);
    this.scheduler = new RedisScheduler(this.connection, this.horizonMs, this.clockSkew);
    this.steps = new RedisSeriesSteps(this.connection);
    this.control = new RedisTopicControl(this.connection, this.prefix, async (topic, forWrite) =>
      allShards(forWrite ? (this.layouts.writable(topic) ?? (await this.layouts.load(topic, true))) : await this.view(topic)),
    );
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
    this.evicting = await new RedisEvictionPolicy(this.connection).check();
    this.epochTimer = setInterval(() => void this.epochWatch.check(), this.wakeCheckMs);
    this.epochTimer.unref();
    this.layouts.start(this.wakeCheckMs);
  }

  /** Told (at once, if connect already found it) when Redis may evict keys, pending actions included (see RedisEvictionPolicy). */
  onStoreEvicting(listener: (detail: string) => void): void {
    if (this.evicting !== undefined) listener(this.evicting);
  }

  /** How many topics' shard layouts this instance holds: those it arms or consumes, and (bounded) those it only read lately. */
  get knownTopics(): { readonly announced: number; readonly read: number } {
    return this.layouts.size;
  }

  /** Told when Redis comes back without its data (see RedisEpochWatch). */
  onStoreReset(listener: (detail: string) => void): void {
    this.storeResetListeners.push(listener);
  }

  async schedule(command: ScheduleCommand): Promise<ScheduleResult> {
    const view = this.layouts.writable(command.topic) ?? (await this.layouts.load(command.topic, true));
    if (view.others.length > 0) return this.scheduleAcrossLayouts(command, view);
    return this.scheduler.schedule(view.current.keysFor(command.key), command);
  }

  async scheduleMany(command: ScheduleManyCommand): Promise<ScheduleResult[]> {
    const view = this.layouts.writable(command.topic) ?? (await this.layouts.load(command.topic, true));
    if (view.others.length === 0 && view.current.count === 1) return this.scheduler.scheduleMany(view.current.shards[0], command, command.entries, 'write');
    return this.scheduleManySharded(command, view);
  }

  async cancel(topic: string, key: string): Promise<boolean> {
    const view = this.layouts.view(topic) ?? (await this.layouts.load(topic));
    if (view.others.length === 0) return this.cancelIn(view.current.keysFor(key), key);
    const removed = await Promise.all(view.all.map((layout) => this.cancelIn(layout.keysFor(key), key)));
    return removed.includes(true);
  }

  async reschedule(command: RescheduleCommand): Promise<StoredAction | null> {
    const view = await this.view(command.topic);
    for (const layout of view.all) {
      const moved = await this.rescheduleIn(layout.keysFor(command.key), command);
      if (moved) return moved;
    }
    return null;
  }

  async get(topic: string, key: string): Promise<StoredAction | null> {
    const view = this.layouts.view(topic) ?? (await this.layouts.load(topic));
    const found = await this.queries.get(topic, view.current.keysFor(key), key);
    if (found || view.others.length === 0) return found;
    return (await this.findIn(view.others, topic, key))?.action ?? null;
  }

  async list(topic: string, page: Required<PageRequest>): Promise<StoredAction[]> {
    return this.queries.list(topic, allShards(await this.view(topic)), page);
  }

  /** The series' ticks by key: every shard of every known shard count read by key (list-series.lua) and merged. */
  async listSeries(topic: string, page: SeriesPageRequest): Promise<StoredAction[]> {
    return this.queries.listSeries(topic, allShards(await this.view(topic)), page);
  }

  async count(topic: string): Promise<number> {
    return this.queries.count(allShards(await this.view(topic)));
  }

  async listDead(topic: string, page: Required<PageRequest>): Promise<StoredDeadAction[]> {
    return this.queries.listDead(topic, allShards(await this.view(topic)), page);
  }

  async countDead(topic: string): Promise<number> {
    return this.queries.countDead(allShards(await this.view(topic)));
  }

  async redrive(topic: string, id: string): Promise<boolean> {
    const view = await this.view(topic);
    for (const layout of view.all) {
      // A dead batch's id is its key plus a suffix: it lives in its key's shard.
      const candidates = new Set([layout.keysFor(keyOfMember(id)), layout.keysFor(id)]);
      for (const keys of candidates) {
        const reply = await this.connection.write<number>('redrive', [keys.due, keys.env, keys.active, keys.seq, keys.dead, keys.deadIndex], [id, keys.wake, keys.itemsPrefix]);
        if (reply === -3) throw new ActionKindConflictError(topic, id, 'batch');
        if (reply === 1) return true;
      }
    }
    return false;
  }

  async collect(command: CollectCommand): Promise<CollectResult> {
    const view = this.layouts.writable(command.topic) ?? (await this.layouts.load(command.topic, true));
    // While another count drains, a key's open batch there takes its items until it closes.
    const found = view.others.length > 0 ? await this.findIn(view.others, command.topic, command.key) : undefined;
    const keys = found?.keys ?? view.current.keysFor(command.key);
    const reply = await this.connection.write<Reply>(
      'collect',
      [keys.due, keys.env, keys.active, keys.seq],
      [command.key, command.item, command.windowMs, command.maxWaitMs ?? -1, command.slide ? '1' : '0', command.maxItems, keys.wake, keys.itemsPrefix, storableTrace(command.trace), command.maxBytes ?? -1],
    );
    const status = Number(reply[0]);
    if (status === -3) throw new ActionKindConflictError(command.topic, command.key, 'action');
    if (status === -4) throw new BatchTooLargeError(command.topic, command.key, Number(reply[2]), command.maxBytes ?? 0);
    this.clockSkew.value = Number(reply[3]) - Date.now();
    return { size: Number(reply[1]), dueAt: Number(reply[2]), outcome: status === 1 ? 'opened' : status === 2 ? 'joined' : 'flushed' };
  }

  async start(consumer: DelayConsumer): Promise<void> {
    if (consumer.topics.size === 0) return;
    this.handlerSink = consumer;
    const added: RedisTopicConsumer[] = [];
    for (const [topic, concurrency] of consumer.topics) {
      this.budgets.set(topic, new ClaimBudget(concurrency));
      const view = await this.layouts.load(topic, true);
      for (const layout of view.all) added.push(...this.consume(topic, layout));
    }
    const wakes = new Map<string, (dueAt: number) => void>();
    for (const topicConsumer of added) wakes.set(topicConsumer.keys.wake, (dueAt) => topicConsumer.wake(dueAt));
    const lookAgain = this.lookAgain;
    this.subscriber = new RedisWakeSubscriber(this.connection, wakes, lookAgain, this.wakeCheckMs);
    await this.subscriber.start();
    // After the command connection comes back, claims that failed meanwhile are due again at once.
    this.connection.client.on('ready', lookAgain);
    this.leaseTimerMs = this.leases.timerMs([...consumer.topics.keys()].some((topic) => consumer.isRecurringTopic?.(topic) === true));
    this.leaseTimer = setInterval(() => void this.renewLeases(), this.leaseTimerMs);
  }

  async drain(timeoutMs: number): Promise<void> {
    this.handlerSink = undefined;
    for (const topicConsumer of this.consumers.values()) topicConsumer.stop();
    this.subscriber?.stop();
    this.subscriber = undefined;
    const emptied = await this.inFlight.whenEmpty(timeoutMs);
    // A claim still on its way is not waited for to run what it took: answered now, that is handed back too.
    if (!emptied) for (const topicConsumer of this.consumers.values()) topicConsumer.claimInFlight.abandon();
    // What shutdown hands back is bounded on its own: no ask starts after commandTimeout, each is bounded by it.
    await Promise.all([this.releaseLostClaims(Date.now() + this.connection.settings.commandTimeoutMs), emptied ? undefined : this.releaseRunning()]);
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    this.leaseTimer = undefined;
  }

  async close(): Promise<void> {
    this.handlerSink = undefined;
    this.connection.client.off('ready', this.lookAgain);
    for (const topicConsumer of this.consumers.values()) topicConsumer.stop();
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    if (this.epochTimer) clearInterval(this.epochTimer);
    this.layouts.stop();
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

  async runNow(topic: string, key: string): Promise<boolean> {
    const view = await this.view(topic);
    for (const layout of view.all) {
      if (await this.control.runNow(layout.keysFor(key), key)) return true;
    }
    return false;
  }

  async advanceSeries(command: AdvanceSeriesCommand): Promise<AdvanceSeriesResult> {
    const view = this.layouts.writable(command.topic) ?? (await this.layouts.load(command.topic, true));
    // A series armed under another shard count is advanced where it lives (its occurrences share its shard).
    const found = view.others.length > 0 ? await this.findIn(view.others, command.topic, command.key) : undefined;
    // Absent means absent from every layout: a series armed under another shard count stays the one series.
    if (found && 'absent' in command.expect) return { applied: false, created: [], skipped: [], cancelled: [] };
    const keys = found?.keys ?? view.current.keysFor(command.key);
    const { expect, next } = command;
    // advance-series.lua's ARGV, laid out in one array (a step is made for every tick: no intermediate arrays).
    const args: Array<string | number> = [command.key];
    if ('token' in expect) args.push('token', expect.token);
    else if ('payload' in expect) args.push('payload', expect.payload);
    else args.push('absent', '');
    args.push(command.overlap);
    if (next === null) args.push('remove', 0, '');
    else if (next === undefined) args.push('keep', 0, '');
    else pushDue(args, next.due).push(next.payload);
    args.push(keys.wake, command.occurrences.length);
    for (const occurrence of command.occurrences) {
      args.push(occurrence.key);
      pushDue(args, occurrence.due).push(occurrence.payload ?? '');
    }
    args.push(command.orphanGraceMs ?? 0);
    const { whileAlive } = command;
    if (whileAlive) {
      pushDue(args, whileAlive.next.due).push(whileAlive.next.payload, whileAlive.skipped.length);
      for (const skippedKey of whileAlive.skipped) args.push(skippedKey);
    } else {
      args.push('');
    }
    // Gathered with the other steps of this tick for the shard (the ticks of one claim): one script call for them all.
    const reply = await this.steps.step(seriesStepKeys(keys), args);
    if (Number(reply[0]) === 2) return { applied: true, created: [], skipped: [], cancelled: [], orphaned: true };
    if (Number(reply[0]) !== 1) return { applied: false, created: [], skipped: [], cancelled: [] };
    const created = Number(reply[1]);
    const skipped = Number(reply[2]);
    const members = reply.length > 9 ? reply.slice(9).map(String) : [];
    const nextDueAt = Number(reply[4]);
    const blockedBy: SeriesBlocker | undefined =
      String(reply[5]) === '' ? undefined : { occurrenceKey: String(reply[5]), state: String(reply[6]) === 'running' ? 'running' : 'waiting', dueAt: Number(reply[7]), attempt: Number(reply[8]) };
    // Nearly every step creates its occurrences and no more: the members are then the created ones as they are.
    const cancelled = created + skipped === members.length ? [] : members.slice(created + skipped);
    // A cancelled occurrence running here is told now; one running on another instance learns it at its next lease renewal.
    if (cancelled.length > 0) for (const topicConsumer of this.consumers.values()) if (topicConsumer.topic === command.topic) topicConsumer.revoke(cancelled);
    const result: AdvanceSeriesResult = {
      applied: true,
      created: created === members.length ? members : members.slice(0, created),
      skipped: skipped === 0 ? [] : members.slice(created, created + skipped),
      cancelled,
      nextDueAt: nextDueAt < 0 ? undefined : nextDueAt,
    };
    return blockedBy ? { ...result, blockedBy } : result;
  }

  async declareSeries(topic: string, keys: readonly string[], forMs: number): Promise<void> {
    if (keys.length === 0) return;
    const view = this.layouts.writable(topic) ?? (await this.layouts.load(topic, true));
    // Marked in every layout's shard of the key: a series armed under another shard count is advanced where it lives.
    const byShard = new Map<string, string[]>();
    for (const layout of view.all) {
      for (const key of keys) {
        const declared = layout.keysFor(key).declared;
        byShard.set(declared, [...(byShard.get(declared) ?? []), key]);
      }
    }
    await Promise.all(Array.from(byShard, ([declared, shardKeys]) => this.connection.write('declare', [declared], [forMs, ...shardKeys])));
  }

  async lastSeriesRuns(topic: string, keys: readonly string[]): Promise<ReadonlyArray<SeriesRunRecord | null>> {
    if (keys.length === 0) return [];
    const view = await this.view(topic);
    const found = new Map<string, SeriesRunRecord>();
    const byShard = new Map<string, string[]>();
    for (const layout of view.all) {
      for (const key of keys) {
        const runs = layout.keysFor(key).runs;
        byShard.set(runs, [...(byShard.get(runs) ?? []), key]);
      }
    }
    await Promise.all(
      Array.from(byShard, async ([runs, shardKeys]) => {
        const reply = await this.connection.run<unknown[]>('seriesRuns', [runs], shardKeys);
        shardKeys.forEach((key, n) => {
          const record = typeof reply[n] === 'string' ? parseSeriesRun(reply[n] as string) : null;
          const known = found.get(key);
          if (record && (!known || record.at > known.at)) found.set(key, record);
        });
      }),
    );
    return keys.map((key) => found.get(key) ?? null);
  }

  health(): Promise<DriverHealth> {
    const alive = new Map<string, boolean>();
    for (const topicConsumer of this.consumers.values()) alive.set(topicConsumer.topic, (alive.get(topicConsumer.topic) ?? true) && topicConsumer.alive);
    const health = this.control.health(Array.from(alive, ([topic, consumerAlive]) => ({ topic, alive: consumerAlive })));
    const evicting = this.evicting;
    return evicting === undefined ? health : health.then((found) => ({ ...found, warnings: [evicting] }));
  }

  // ---- one shard -------------------------------------------------------

  private async cancelIn(keys: TopicKeys, key: string): Promise<boolean> {
    return (await this.connection.write<number>('cancel', [keys.due, keys.env, keys.active, keys.ticks], [key, keys.itemsPrefix])) === 1;
  }

  private async rescheduleIn(keys: TopicKeys, command: RescheduleCommand): Promise<StoredAction | null> {
    const [mode, value] = dueArgs(command.due);
    const reply = await this.connection.write<Reply>(
      'reschedule',
      [keys.due, keys.env, keys.active, keys.seq, keys.ticks],
      [command.key, mode, value, command.maxPastMs, this.horizonMs, keys.wake],
    );
    const status = this.checkStatus(reply, command.maxPastMs, command.due, command.topic, command.key);
    if (status === 0) return null;
    return toStoredAction(command.topic, command.key, String(reply[1]), false, '');
  }

  // ---- shards and layouts ----------------------------------------------

  private async view(topic: string): Promise<LayoutView> {
    return this.layouts.view(topic) ?? this.layouts.load(topic);
  }

  /** A key in one of `layouts` (those of a count being drained), with the keys of the shard that holds it. */
  private async findIn(layouts: readonly TopicLayout[], topic: string, key: string): Promise<{ action: StoredAction; keys: TopicKeys } | undefined> {
    const found = await Promise.all(layouts.map(async (layout) => ({ keys: layout.keysFor(key), action: await this.queries.get(topic, layout.keysFor(key), key) })));
    const hit = found.find((candidate) => candidate.action !== null);
    return hit?.action ? { action: hit.action, keys: hit.keys } : undefined;
  }

  /**
   * Schedule while another shard count still holds actions (a migration):
   * a key found there is kept there (ifExists 'keep'), or replaced by an
   * arming in this instance's count, after which the old one is removed.
   */
  private async scheduleAcrossLayouts(command: ScheduleCommand, view: LayoutView): Promise<ScheduleResult> {
    const found = await this.findIn(view.others, command.topic, command.key);
    if (found?.action.items !== undefined) throw new ActionKindConflictError(command.topic, command.key, 'batch');
    if (found && command.ifExists === 'keep') return { action: found.action, outcome: 'kept' };
    const result = await this.scheduler.schedule(view.current.keysFor(command.key), command);
    if (!found || result.outcome === 'kept') return result;
    await this.cancelIn(found.keys, command.key);
    return { action: result.action, outcome: 'replaced' };
  }

  /**
   * scheduleMany over shards: entries are grouped by shard; every group is
   * checked first (nothing is written if any entry is refused), then each
   * group is written in one atomic call. Only a change made between the
   * check and the write (another instance opening a batch on one of the
   * keys) can refuse a group after others were written.
   */
  private async scheduleManySharded(command: ScheduleManyCommand, view: LayoutView): Promise<ScheduleResult[]> {
    const results: Array<ScheduleResult | undefined> = new Array(command.entries.length);
    const moved = new Map<string, TopicKeys>();
    let toWrite = command.entries.map((entry, index) => ({ entry, index }));
    if (view.others.length > 0) {
      const found = await Promise.all(command.entries.map((entry) => this.findIn(view.others, command.topic, entry.key)));
      found.forEach((hit, index) => {
        if (hit?.action.items !== undefined) throw new ActionKindConflictError(command.topic, command.entries[index].key, 'batch');
      });
      toWrite = toWrite.filter(({ entry, index }) => {
        const hit = found[index];
        if (!hit) return true;
        if (entry.ifExists === 'keep') {
          results[index] = { action: hit.action, outcome: 'kept' };
          return false;
        }
        moved.set(entry.key, hit.keys);
        return true;
      });
    }
    const groups = new Map<TopicKeys, Array<{ entry: ScheduleManyCommand['entries'][number]; index: number }>>();
    for (const item of toWrite) {
      const keys = view.current.keysFor(item.entry.key);
      const group = groups.get(keys);
      if (group) group.push(item);
      else groups.set(keys, [item]);
    }
    if (groups.size > 1) {
      await Promise.all(Array.from(groups, ([keys, group]) => this.scheduler.scheduleMany(keys, command, group.map(({ entry }) => entry), 'check')));
    }
    await Promise.all(
      Array.from(groups, async ([keys, group]) => {
        const written = await this.scheduler.scheduleMany(keys, command, group.map(({ entry }) => entry), 'write');
        group.forEach(({ index }, n) => (results[index] = written[n]));
      }),
    );
    // Keys moved from a count being drained: the old arming goes once the new one is written.
    await Promise.all(Array.from(moved, ([key, keys]) => this.cancelIn(keys, key)));
    return results.map((result, index) => {
      if (!result) throw new Error(`scheduleMany: entry ${index} has no result`);
      return moved.has(command.entries[index].key) && result.outcome === 'created' ? { ...result, outcome: 'replaced' } : result;
    });
  }

  /**
   * A topic paused under another shard count stays paused when this
   * instance starts arming it under its own: its shards get the mark too.
   */
  private async carryPauseOver(topic: string, view: LayoutView): Promise<void> {
    const marks = await Promise.all(view.others.map((layout) => this.connection.call('EXISTS', (client) => client.exists(layout.shards[0].paused))));
    if (!marks.includes(1)) return;
    await Promise.all(view.current.shards.map((keys) => this.connection.write<number>('pause', [keys.paused], [])));
    this.logger.log(`${quoteInput(topic)} is paused under another shard count: paused under ${view.current.count} shard(s) too`);
  }

  /** Consumers for the shards of one layout of a topic consumed here. */
  private consume(topic: string, layout: TopicLayout): RedisTopicConsumer[] {
    const sink = this.handlerSink;
    const budget = this.budgets.get(topic);
    if (!sink || !budget) return [];
    const added: RedisTopicConsumer[] = [];
    const recurring = sink.isRecurringTopic?.(topic) === true;
    for (const keys of layout.shards) {
      if (this.consumers.has(keys.env)) continue;
      const topicConsumer = new RedisTopicConsumer(
        { topic, keys, budget, claimBatch: this.claimBatch, leaseMs: this.leases.leaseFor(recurring), recurring, wakeCheckMs: this.wakeCheckMs },
        this.connection,
        sink,
        this.inFlight,
        this.clockSkew,
      );
      this.consumers.set(keys.env, topicConsumer);
      added.push(topicConsumer);
    }
    return added;
  }

  /** Another instance uses a new count (consume it too), or a drained one was forgotten (stop consuming it). */
  private layoutsChanged(topic: string, view: LayoutView, previous: LayoutView): void {
    for (const layout of view.all) {
      if (previous.all.includes(layout)) continue;
      this.logger.log(`${quoteInput(topic)}: actions under ${layout.count} shard(s) are consumed here too`);
      for (const topicConsumer of this.consume(topic, layout)) {
        this.subscriber?.listen(topicConsumer.keys.wake, (dueAt) => topicConsumer.wake(dueAt));
        topicConsumer.kick();
      }
    }
    for (const layout of previous.all) {
      if (view.all.includes(layout)) continue;
      for (const keys of layout.shards) {
        const topicConsumer = this.consumers.get(keys.env);
        if (!topicConsumer || topicConsumer.holdsLeases) continue;
        topicConsumer.stop();
        this.consumers.delete(keys.env);
        this.subscriber?.unlisten(keys.wake);
      }
    }
  }

  // ---- helpers ---------------------------------------------------------

  /** Turns a script's range refusal into the same typed error the wheel throws. */
  private checkStatus(reply: Reply, maxPastMs: number, due: DueSpec, topic: string, key: string): number {
    const status = Number(reply[0]);
    this.clockSkew.value = Number(reply[2]) - Date.now();
    if (status < 0) throw refusal(status, topic, { key, due }, reply[1], maxPastMs, this.horizonMs);
    return status;
  }

  /**
   * All shards at once, each on its own: a shard whose master does not answer must not hold up the renewals of the
   * others until their leases expire. Each renewal is bounded by the command timeout, and a consumer's next one waits
   * for its last (LeaseRenewals.due), so slow ones do not pile up.
   */
  private async renewLeases(): Promise<void> {
    const now = Date.now();
    const renewals = [...this.consumers.values()]
      .filter((topicConsumer) => topicConsumer.holdsLeases && this.leases.due(topicConsumer, topicConsumer.recurring, this.leaseTimerMs, now))
      .map((topicConsumer) => {
        const keys = topicConsumer.keys;
        return this.leases.track(topicConsumer, () =>
          this.connection
            .run<unknown[]>('extend', [keys.env, keys.active], [topicConsumer.leaseMs, ...topicConsumer.leasePairs()])
            .then((lost) => topicConsumer.revoke(lost.map(String)))
            .catch((error: unknown) => {
              this.logger.warn(`Could not renew leases: ${describeError(error)}`);
            }),
        );
      });
    await Promise.all(renewals);
  }

  /** Shutdown timed out: hand the runs still going back to Redis so another instance takes them now. */
  private async releaseRunning(): Promise<void> {
    const releases = [...this.consumers.values()].filter((topicConsumer) => topicConsumer.running.size > 0).map((topicConsumer) => this.releaseShard(topicConsumer));
    await Promise.all(releases);
  }

  /**
   * Claims whose reply was lost (their connection closed) and that were not asked again before shutdown: what they
   * took is handed back, due now, same attempt. The connection may still be coming back, or close again: the ask and
   * the hand-back are made again once it is ready, until `deadline`.
   */
  private async releaseLostClaims(deadline: number): Promise<void> {
    await claimsSettled([...this.consumers.values()].map((topicConsumer) => topicConsumer.claimInFlight), deadline);
    const lost = [...this.consumers.values()].filter((topicConsumer) => topicConsumer.hasLostClaim);
    if (lost.length === 0) return;
    await this.connection.whenReady(Math.max(0, deadline - Date.now()));
    const releases = lost.map(async (topicConsumer) => {
      let pairs: string[] | undefined;
      try {
        // Handing back twice changes nothing (release.lua names each run's token): a lost reply to it is sent again too.
        const released = await untilDeadline(
          deadline,
          async () => {
            pairs ??= await topicConsumer.lostClaimPairs();
            return pairs.length === 0 ? 0 : this.release(topicConsumer, pairs);
          },
          (leftMs) => this.connection.whenReady(leftMs),
        );
        if (released > 0) this.logger.log(`Shutdown: ${released} action(s) of ${quoteInput(topicConsumer.topic)} that a claim whose reply was lost took handed back to Redis`);
      } catch (error) {
        this.logger.warn(`Could not hand back what a claim whose reply was lost took (its lease will expire instead): ${describeError(error)}`);
      }
    });
    await Promise.all(releases);
  }

  /** release.lua: the runs named by member, token pairs handed back to their shard, due now, same attempt. */
  private release(topicConsumer: RedisTopicConsumer, pairs: readonly string[]): Promise<number> {
    const keys = topicConsumer.keys;
    return this.connection.run<number>('release', [keys.due, keys.env, keys.active, keys.seq, keys.ticks], [keys.wake, ...pairs]);
  }

  private async releaseShard(topicConsumer: RedisTopicConsumer): Promise<void> {
    const released = await this.release(topicConsumer, topicConsumer.memberTokenPairs())
      .catch((error: unknown) => {
        this.logger.warn(`Could not hand running actions back (their leases will expire instead): ${describeError(error)}`);
        return 0;
      });
    this.logger.warn(`Shutdown timed out: ${released} running action(s) of ${quoteInput(topicConsumer.topic)} handed back to Redis`);
  }
}

/** A series' last run as lua/include/series-run.lua stores it: "outcome|startedAt|attempt|at|occurrence key". */
function parseSeriesRun(text: string): SeriesRunRecord | null {
  const match = /^(succeeded|retrying|dead|skipped)\|(\d*)\|(\d+)\|(\d+)\|(.*)$/s.exec(text);
  if (!match) return null;
  const [, outcome, startedAt, attempt, at, occurrence] = match;
  return { outcome: outcome as SeriesRunRecord['outcome'], startedAt: startedAt === '' ? undefined : Number(startedAt), attempt: Number(attempt), at: Number(at), ...readSkippedOccurrence(occurrence) };
}

/** advance-series.lua's keys of a shard, built once per shard (a step is made for every tick). */
const stepKeys = new WeakMap<TopicKeys, string[]>();

function seriesStepKeys(keys: TopicKeys): string[] {
  let found = stepKeys.get(keys);
  if (!found) {
    found = [keys.due, keys.env, keys.active, keys.seq, keys.series, keys.ticks, keys.runs, keys.declared, keys.schedules];
    stepKeys.set(keys, found);
  }
  return found;
}

/** Every shard of every known layout of a topic. */
function allShards(view: LayoutView): TopicKeys[] {
  return view.all.flatMap((layout) => layout.shards);
}
