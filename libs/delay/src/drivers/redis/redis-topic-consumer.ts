import { randomBytes } from 'node:crypto';
import { ClaimInFlight } from '../claim-in-flight';
import { ClaimTimer } from '../claim-timer';
import { Logger } from '@nestjs/common';
import { DelayConsumer, Delivery, DeliveryOutcome } from '../../interfaces/delay-driver.interface';
import { DriverUnavailableError } from '../../errors/driver-unavailable.error';
import { InFlightTracker } from '../in-flight-tracker';
import { runDelivery } from '../run-delivery';
import { describeError } from '../../utils/describe-error';
import { RedisConnection } from './redis-connection';
import { isBatchEnvelope, keyOfMember, parseEnvelope, parseItems } from './redis-envelope';
import { TopicKeys } from './redis-keys';
import { ClaimBudget } from './redis-claim-budget';
import { quoteInput } from '../../utils/quote-input';
import { SERIES_SEPARATOR } from '../../recurring/occurrence-key';

/** Recurring ticks one claim takes besides its handler slots (claim.lua, KEYS[8]). */
const TICKS_PER_CLAIM = 64;
/** The items field claim.lua gives a tick taken besides the slots. */
const TICK_MARK = '\u001e';

/** How long to wait before trying Redis again after `failures` failed round trips: 200 ms doubling to 2 s. */
function retryDelay(failures: number): number {
  return Math.min(2_000, 100 * 2 ** Math.min(failures, 5));
}

/**
 * The lease a claim gives what it takes, until the first renewal brings it
 * to `lease`: long enough for this instance to ask again for a claim whose
 * reply was lost before that lease runs out, whatever `lease` is. A reply
 * lost with a socket that closed is asked for again as soon as the client
 * has reconnected; one lost on a socket that stays silent, once the claim's
 * time bound has passed, then a PING's (the dead socket is then replaced),
 * then a reconnect (the extra second). Asked again in time, the claim hands
 * back what it took, same attempt; too late, the actions come back as a new
 * attempt and, on their last one, go to the dead set without running.
 */
export function firstLeaseMs(leaseMs: number, commandTimeoutMs: number): number {
  return Math.max(leaseMs, 2 * commandTimeoutMs + 1_000);
}

export interface TopicConsumerSettings {
  readonly topic: string;
  /** The keys of the shard this consumer claims from. */
  readonly keys: TopicKeys;
  /** The topic's handler slots in this process, shared by the consumers of its shards. */
  readonly budget: ClaimBudget;
  readonly claimBatch: number;
  readonly leaseMs: number;
  /** A recurring topic: its claims lease for `leaseMs` from the start (a stopped instance must not hold an occurrence longer). */
  readonly recurring?: boolean;
  /** Look at least this often even if no wake-up came: a pub/sub message can be lost with its connection. */
  readonly wakeCheckMs: number;
}

/**
 * Consumes one shard of a topic in this process (a topic kept in one shard
 * has one consumer). It sleeps until the shard's next due time (as the
 * claim script reports it, in Redis time) and is woken earlier by the
 * shard's wake channel. A wake that arrives while a claim is in
 * flight is remembered and applied when the claim returns, so no wake-up is
 * lost between reading the next due time and arming the timer.
 */
export class RedisTopicConsumer {
  private readonly logger = new Logger(RedisTopicConsumer.name);
  /** Runs going on here → their member (key, or a closed batch's id), for acks, lease renewal and release at shutdown. */
  readonly running = new Map<Delivery, string>();
  /** Runs whose handler is done but whose outcome is not recorded yet: their leases are still renewed meanwhile. */
  private readonly settling = new Map<Delivery, string>();
  private readonly timer: ClaimTimer;
  /** The claim on its way to the store, if any (shutdown waits for it, or hands back what it took). */
  readonly claimInFlight = new ClaimInFlight();
  private claimAgain = false;
  private wakeDuringClaim = Infinity;
  private stopped = false;
  private failures = 0;
  /** The last claim could not take everything due: finishing runs claim more. */
  private backlog = false;
  /** member, token, start time ('' unless a recurring occurrence) of completed runs waiting for the next ack flush. */
  private acks: string[] = [];
  private ackFlush: Promise<void> | undefined;
  private claimQueued = false;
  /**
   * The id of the claim being made. It is kept when the claim's reply did not
   * arrive (the script may have run), so the next claim asks for the same one
   * and gets back what it took, same attempt, instead of waiting for its lease.
   */
  private claimId: string | undefined;
  /** The last claim whose reply arrived: the next claim deletes its record. */
  private answeredClaimId = '-';
  /** Slots kept for a claim whose reply was lost: asked again, it hands back what it took then. */
  private held = 0;
  /** Claim ids: this consumer's random prefix and a count, unique without drawing random bytes at every claim. */
  private readonly claimIdPrefix = `${randomBytes(8).toString('base64url')}.`;
  private claimCount = 0;

  constructor(
    private readonly settings: TopicConsumerSettings,
    private readonly connection: RedisConnection,
    private readonly consumer: DelayConsumer,
    private readonly inFlight: InFlightTracker,
    /** Redis time minus local time, kept fresh from every script reply. */
    private readonly clockSkew: { value: number },
  ) {
    this.timer = new ClaimTimer(clockSkew, () => void this.claim());
  }

  /** Something is due at `at` (Redis ms): make sure we look by then. */
  wake(at: number): void {
    if (this.stopped) return;
    if (this.claimInFlight.active) this.wakeDuringClaim = Math.min(this.wakeDuringClaim, at);
    else this.timer.armAt(at);
  }

  /** Looks now: at start, after a reconnect, when a handler slot frees up. */
  kick(): void {
    void this.claim();
  }

  /** Running, and its last claim reached Redis (health). */
  get alive(): boolean {
    return !this.stopped && this.failures === 0;
  }

  stop(): void {
    this.stopped = true;
    this.settings.budget.leave(this.wakeForRoom);
    this.settings.budget.give(this.held);
    this.held = 0;
    this.timer.disarm();
  }

  /** The keys of the shard it claims from (lease renewal and release at shutdown use them). */
  get keys(): TopicKeys {
    return this.settings.keys;
  }

  get topic(): string {
    return this.settings.topic;
  }

  /** The lease its claims give and its renewals bring back (the shorter recurring lease on a recurring topic). */
  get leaseMs(): number {
    return this.settings.leaseMs;
  }

  get recurring(): boolean {
    return this.settings.recurring === true;
  }

  /** A handler slot of the topic freed while this shard had more due work than it could take. */
  private readonly wakeForRoom = (): void => {
    if (!this.stopped) this.queueClaim();
  };

  /** Whether a claim's reply was lost and the claim not asked again yet (see lostClaimPairs). */
  get hasLostClaim(): boolean {
    return this.claimId !== undefined && !this.claimInFlight.active;
  }

  /**
   * At shutdown, once nothing is in flight: what a claim whose reply was lost took, as member, token pairs to hand
   * back. Its actions would otherwise wait out their lease, and then run elsewhere only as their next attempt (on the
   * last one, go dead without running). The claim is asked once more, taking nothing new. Empty when no reply was lost.
   */
  async lostClaimPairs(): Promise<string[]> {
    const claimId = this.claimId;
    if (claimId === undefined || this.claimInFlight.active) return [];
    const reply = await this.runClaim(claimId, 0, 0);
    this.claimId = undefined;
    const pairs: string[] = [];
    for (let n = 3; n < reply.length; n += 3) pairs.push(String(reply[n]), parseEnvelope(String(reply[n + 1])).token);
    return pairs;
  }

  /** One call of claim.lua: up to `limit` due actions and `ticks` recurring ticks, or what claim `claimId` took if it ran. */
  private runClaim(claimId: string, limit: number, ticks: number): Promise<Array<string | number>> {
    const { keys, leaseMs, recurring } = this.settings;
    return this.connection.run<Array<string | number>>(
      'claim',
      [keys.due, keys.env, keys.active, keys.seq, keys.claimPrefix + claimId, keys.claimPrefix + this.answeredClaimId, keys.paused, keys.ticks],
      [limit, recurring ? leaseMs : firstLeaseMs(leaseMs, this.connection.settings.commandTimeoutMs), keys.itemsPrefix, ticks],
    );
  }

  private async claim(): Promise<void> {
    if (this.stopped) return;
    if (this.claimInFlight.active) {
      this.claimAgain = true;
      return;
    }
    // Slots are taken before the claim and what it does not fill is given back: shards claiming at once never overcommit.
    const limit = this.held + this.settings.budget.take(this.settings.claimBatch - this.held, this.wakeForRoom);
    this.held = 0;
    this.claimInFlight.begin();
    this.claimAgain = false;
    this.wakeDuringClaim = Infinity;
    // A claim round trip counts as in flight: if shutdown starts meanwhile, drain waits for what it takes to run.
    this.inFlight.enter();
    let reply: Array<string | number>;
    const claimId = (this.claimId ??= `${this.claimIdPrefix}${(this.claimCount++).toString(36)}`);
    try {
      reply = await this.runClaim(claimId, Math.max(0, limit), TICKS_PER_CLAIM);
      this.failures = 0;
    } catch (error) {
      // Redis refused the script itself: asking the same claim again would not help.
      if (!(error instanceof DriverUnavailableError)) this.claimId = undefined;
      // A claim that may have run keeps its slots for when it is asked again; any other failure gives them back.
      if (this.claimId !== undefined && !this.stopped) this.held = limit;
      else this.settings.budget.give(limit);
      this.claimInFlight.end();
      this.inFlight.leave();
      this.retryLater(error);
      return;
    }
    if (this.claimInFlight.abandoned) {
      // Shutdown no longer waits for what this claim took: it stays a claim to ask again (its id kept), and is handed back.
      this.settings.budget.give(limit);
      this.claimInFlight.end();
      this.inFlight.leave();
      return;
    }
    this.claimId = undefined;
    this.answeredClaimId = claimId;
    this.claimInFlight.end();
    const now = Number(reply[0]);
    this.clockSkew.value = now - Date.now();
    let claimed = 0;
    let ticks = 0;
    // A recurring tick taken besides the limit holds no handler slot.
    for (let n = 3; n < reply.length; n += 3) {
      if (String(reply[n + 2]) === TICK_MARK) ticks++;
      else claimed++;
    }
    // A claim asked again returns what it took then, which may be more than this claim's slots.
    if (claimed > limit) this.settings.budget.occupy(claimed - limit);
    else this.settings.budget.give(limit - claimed);
    // The next claim, when there is more to take, leaves before what this one took runs: Redis makes it
    // while this process runs those (and their series steps follow it), instead of each waiting for the other.
    if (!this.stopped) this.planNext(reply, now, limit, claimed, ticks);
    try {
      for (let n = 3; n < reply.length; n += 3) {
        const items = String(reply[n + 2]);
        const tick = items === TICK_MARK;
        try {
          this.run(String(reply[n]), String(reply[n + 1]), tick ? '' : items, now, tick);
        } catch (error) {
          // Data no version of this driver wrote: say so, and keep the topic going (its lease expires, then it ends dead).
          this.logger.error(`Cannot run ${quoteInput(this.settings.topic)} / ${quoteInput(String(reply[n]))}: ${describeError(error)}`);
          if (!tick) this.settings.budget.give(1);
        }
      }
    } finally {
      this.inFlight.leave();
    }
  }

  /** After a claim's reply: claims again now if it could not take all that is due, else sleeps until the next due time or wake. */
  private planNext(reply: ReadonlyArray<string | number>, now: number, limit: number, claimed: number, ticks: number): void {
    const next = Number(reply[1]);
    const nextTick = Number(reply[2]);
    const nextAt = Math.min(next < 0 ? Infinity : next, this.wakeDuringClaim);
    this.backlog = (limit > 0 && claimed === limit) || (limit <= 0 && nextAt <= now);
    if (this.claimAgain || (this.backlog && this.settings.budget.hasRoom) || ticks === TICKS_PER_CLAIM) {
      void this.claim();
    } else if (this.backlog) {
      this.settings.budget.waitForRoom(this.wakeForRoom);
      // Ticks take no slot: the next one is claimed on time even while every slot is busy.
      if (nextTick >= 0) this.timer.armAt(Math.min(nextTick, now + this.settings.wakeCheckMs));
    } else {
      // Never sleep longer than the safety re-check, in case a wake-up is lost.
      this.timer.armAt(Math.min(nextAt, now + this.settings.wakeCheckMs));
    }
  }

  /** One claim for every slot freed in this turn of the event loop, not one per slot. */
  private queueClaim(): void {
    if (this.claimQueued) return;
    this.claimQueued = true;
    setImmediate(() => {
      this.claimQueued = false;
      void this.claim();
    });
  }

  private retryLater(error: unknown): void {
    if (this.stopped) return;
    this.failures++;
    const delay = retryDelay(this.failures);
    if (this.failures === 1 || this.failures % 20 === 0) {
      this.logger.warn(`Claiming ${quoteInput(this.settings.topic)} failed (${describeError(error)}); retrying`);
    }
    this.timer.armAt(Date.now() + this.clockSkew.value + delay);
  }

  /**
   * Runs going on here whose arming is gone (cancelled, re-armed): the
   * consumer is told, so their handlers' signals fire. `members` come from a
   * lease renewal that found their token changed, or from a cancel made here.
   */
  revoke(members: readonly string[]): void {
    const { consumer } = this;
    if (members.length === 0 || !consumer.revoke) return;
    const gone = new Set(members);
    for (const [delivery, member] of this.running) if (gone.has(member)) consumer.revoke(delivery.topic, delivery.key, delivery.token);
  }

  /** [member, token, member, token, ...] of the runs going on, as the extend and release scripts take them. */
  memberTokenPairs(): string[] {
    return Array.from(this.running, ([delivery, member]) => [member, delivery.token]).flat();
  }

  /** Whether any lease of this topic is held here: runs going on, or finished runs whose outcome is being recorded. */
  get holdsLeases(): boolean {
    return this.running.size > 0 || this.settling.size > 0;
  }

  /** The pairs whose leases are renewed: runs going on, and runs whose outcome is not recorded yet (an outage must not let their lease expire and re-run finished work). */
  leasePairs(): string[] {
    return [...this.memberTokenPairs(), ...Array.from(this.settling, ([delivery, member]) => [member, delivery.token]).flat()];
  }

  private run(member: string, text: string, items: string, now: number, tick = false): void {
    const envelope = parseEnvelope(text);
    const batch = isBatchEnvelope(envelope);
    const delivery: Delivery = {
      topic: this.settings.topic,
      key: keyOfMember(member),
      payload: batch ? undefined : envelope.payload,
      items: batch ? parseItems(items) : undefined,
      dueAt: envelope.dueAt,
      firedAt: now,
      attempt: envelope.attempt,
      token: envelope.token,
      trace: envelope.trace,
    };
    this.running.set(delivery, member);
    this.inFlight.enter();
    runDelivery(this.consumer, delivery, (outcome) => {
      let recorded: Promise<void>;
      try {
        // The handler slot frees as soon as the handler is done; its ack travels with others.
        this.running.delete(delivery);
        this.settling.set(delivery, member);
        // Completions in one turn of the event loop share one claim (queueClaim), whichever shard gets the slot.
        if (!tick) this.settings.budget.give(1);
        recorded = this.settle(delivery, member, outcome);
      } catch (error) {
        // The run is over even so: it must not hold drain or renew its lease for ever. The dispatcher logs the error.
        this.doneWith(delivery);
        throw error;
      }
      void recorded.finally(() => this.doneWith(delivery));
    });
  }

  /** A run whose outcome is recorded, or never will be: no longer settling, no longer in flight. */
  private doneWith(delivery: Delivery): void {
    this.settling.delete(delivery);
    this.inFlight.leave();
  }

  private settle(delivery: Delivery, member: string, outcome: DeliveryOutcome): Promise<void> {
    const { keys } = this.settings;
    // An occurrence of a recurring schedule: the outcome script also records it as the schedule's last run.
    const startedAt = delivery.key.includes(SERIES_SEPARATOR) ? String(delivery.firedAt) : '';
    if (outcome.kind === 'completed') return this.ack(member, delivery.token, startedAt);
    // Named only off the hot path: a completed run (nearly every run) never needs it.
    const what = `${quoteInput(this.settings.topic)} / ${quoteInput(delivery.key)}`;
    if (outcome.kind === 'retry') return this.record('retry', [keys.due, keys.env, keys.active, keys.seq, keys.runs, keys.ticks], [member, delivery.token, outcome.delayMs, keys.wake, startedAt], what);
    return this.record('bury', [keys.env, keys.active, keys.dead, keys.deadIndex, keys.runs], [member, delivery.token, outcome.error, keys.itemsPrefix, startedAt], what);
  }

  /**
   * Acks a completed run together with every other run that completes in
   * the same turn of the event loop: one script call, one round trip, for
   * all of them (a burst is otherwise bound by one write per action).
   */
  private ack(member: string, token: string, startedAt: string): Promise<void> {
    this.acks.push(member, token, startedAt);
    if (!this.ackFlush) {
      this.ackFlush = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        const pairs = this.acks;
        this.acks = [];
        this.ackFlush = undefined;
        const { keys } = this.settings;
        return this.record('complete', [keys.env, keys.active, keys.runs], [keys.itemsPrefix, ...pairs], `${pairs.length / 3} completed run(s) of ${quoteInput(this.settings.topic)}`);
      });
    }
    return this.ackFlush;
  }

  /** Runs an outcome script, retrying while Redis is away; if it never comes back, the lease expires and the run is redone. */
  private async record(script: 'complete' | 'retry' | 'bury', keys: string[], args: Array<string | number>, what: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.connection.run(script, keys, args);
        return;
      } catch (error) {
        // A connection closed at shutdown never comes back: retrying would only keep the process alive.
        if (!(error instanceof DriverUnavailableError) || attempt >= 50 || this.connection.isClosed) {
          this.logger.error(`Could not record the outcome of ${what}: ${describeError(error)}; it will run again when its lease expires`);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, retryDelay(attempt)));
      }
    }
  }
}
