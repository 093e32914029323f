import { randomBytes } from 'node:crypto';
import { ClaimInFlight } from '../claim-in-flight';
import { ClaimTimer } from '../claim-timer';
import { Logger } from '@nestjs/common';
import { DelayConsumer, Delivery, DeliveryOutcome } from '../../interfaces/delay-driver.interface';
import { DriverUnavailableError } from '../../errors/driver-unavailable.error';
import { SERIES_SEPARATOR } from '../../recurring/occurrence-key';
import { describeError } from '../../utils/describe-error';
import { InFlightTracker } from '../in-flight-tracker';
import { runDelivery } from '../run-delivery';
import { PostgresConnection, Row } from './postgres-connection';
import { PostgresClaimLedger } from './postgres-claim-ledger';
import { readClaimReply } from './postgres-claim-reply';
import { PostgresClockOffset } from './postgres-clock-offset';
import { AckBatch, PendingAcks } from './postgres-pending-acks';
import { inDueOrder, int, toDelivery } from './postgres-rows';
import { PostgresStatements } from './postgres-statements';

/**
 * Recurring ticks one claim takes besides its handler slots (the claim statement's $5): as many as the occurrences a
 * claim can take (claimBatch, and no more than the topic's concurrency), which the ticks' steps create, within these
 * bounds. With 10,000 schedules every second, 256 occurrences and 512 ticks a claim ran them later (p99 1.18 s) than
 * 256 and 256 (0.87-0.96 s).
 */
const MIN_TICKS_PER_CLAIM = 128;
const MAX_TICKS_PER_CLAIM = 256;
/**
 * Ticks a claim takes while the topic is behind: the claim before filled its slots, left more due, and took an action
 * due BEHIND_AFTER_MS ago or more. Each tick's step creates more work, and a step that finds the schedule's previous
 * occurrence still waiting costs several times a plain one: stepping fewer then lets the occurrences catch up instead
 * of the backlog feeding itself.
 */
const TICKS_PER_CLAIM_BEHIND = 32;
const BEHIND_AFTER_MS = 1_000;
/**
 * A drain's claims start their scan where the last one ended, but one claim at least this often starts at the topic's
 * first row (and looks for expired leases to take back).
 */
const FULL_SCAN_EVERY_MS = 1_000;
/**
 * A notification that led to a claim that found nothing new (forged, replayed, or for a due time already known)
 * spaces out the claims the next ones cause: from this gap, doubling up to NOTIFIED_GAP_MAX_MS. Any role may notify
 * the channel; a flood then costs each instance a few claims per second per topic, not one claim per notification.
 */
const NOTIFIED_GAP_MIN_MS = 20;
const NOTIFIED_GAP_MAX_MS = 250;
/** Claims that wait this long in a row for the topic's turn make the topic unhealthy (with a warning) and are logged. */
const STALLED_AFTER_MS = 5_000;

/** How long to wait before trying again after `failures` failed round trips: 200 ms doubling to 2 s. */
function retryDelay(failures: number): number {
  return Math.min(2_000, 100 * 2 ** Math.min(failures, 5));
}

/** A run going on here: its action's member (key, or a closed batch's id) and the claim that took it. */
interface RunRef {
  readonly member: string;
  readonly claimId: string;
}

export interface PostgresConsumerSettings {
  readonly topic: string;
  /** How many handlers of the topic may run at once in this process. */
  readonly concurrency: number;
  readonly claimBatch: number;
  readonly leaseMs: number;
  /** A recurring topic (its lease is the shorter recurring lease, renewed every fifth of it). */
  readonly recurring?: boolean;
  /** Look at least this often even if no notification came. */
  readonly wakeCheckMs: number;
}

/**
 * Consumes one topic in this process. It sleeps until the topic's next due
 * time (as the claim reports it, on the database's clock) and is woken
 * earlier by a notification. A wake that arrives while a claim is in flight
 * is remembered and applied when the claim returns, so an action armed at
 * that moment is not missed.
 *
 * Outcomes name the run's token: a run whose action was re-armed, moved or
 * cancelled meanwhile changes nothing. A claim holds one lease for what it
 * took (its runs row); once every run of a claim is over, the row is deleted.
 * A claim whose reply was lost is asked again under its id and hands back
 * what it took, same attempt.
 */
export class PostgresTopicConsumer {
  private readonly logger = new Logger(PostgresTopicConsumer.name);
  /** Runs going on here. */
  readonly running = new Map<Delivery, RunRef>();
  /** Runs whose handler is done but whose outcome is not recorded yet: their claims' leases are still renewed. */
  private readonly settling = new Map<Delivery, RunRef>();
  private readonly claims = new PostgresClaimLedger();
  /** A notification came (while a claim was in flight, or while its claim waits for the gap below). */
  private notified = false;
  /** The gap kept between claims caused by notifications: 0 while they find something new. */
  private notifiedGapMs = 0;
  private lastNotifiedClaimAt = 0;
  private notifiedTimer: NodeJS.Timeout | undefined;
  /** Since when (local ms) every claim has waited for the topic's turn in vain; undefined once one had it. */
  private busySince: number | undefined;
  private stallLogged = false;
  private used = 0;
  private readonly timer: ClaimTimer;
  /** The claim on its way to the store, if any (shutdown waits for it, or hands back what it took). */
  readonly claimInFlight = new ClaimInFlight();
  private claimAgain = false;
  private wakeDuringClaim = Infinity;
  private stopped = false;
  private failures = 0;
  /** Due rows held by other transactions (another instance's claim, an application's open write): look again soon, backing off. */
  private lockedLooks = 0;
  private waitingForRoom = false;
  private claimQueued = false;
  /** Completed runs not yet recorded: the next claim carries them, or a statement of their own at the end of this turn. */
  private acks = new PendingAcks();
  /**
   * Claims whose reply did not arrive (the statement may have committed, or may still be waiting for its turn):
   * each claim asks for what they took, until one hands something back or its lease would have run out (local ms).
   */
  private lostClaims: Array<{ id: string; until: number }> = [];
  /** Due time and member of the last row a full claim picked: the next claim of the drain starts its scan past it (see the claim statement). */
  private resumeAt: { dueAt: number; member: string } | null = null;
  private lastFullScanAt = 0;
  /** The topic is behind (see TICKS_PER_CLAIM_BEHIND): the next claim takes fewer ticks. */
  private behind = false;
  /** Recurring ticks a claim takes while the topic keeps up (see MIN_TICKS_PER_CLAIM). */
  private readonly ticksPerClaim: number;
  /**
   * The next claim scans from the topic's first row: something may be due before the resume point (a wake: a
   * write made the topic's earliest due time earlier, or runs were handed back; runs whose lease expired).
   */
  private scanFromStart = true;

  constructor(
    private readonly settings: PostgresConsumerSettings,
    private readonly connection: PostgresConnection,
    private readonly sql: PostgresStatements,
    private readonly consumer: DelayConsumer,
    private readonly inFlight: InFlightTracker,
    /** Database time minus local time, sampled by every claim. */
    private readonly clockOffset: PostgresClockOffset,
  ) {
    this.timer = new ClaimTimer(clockOffset, () => void this.claim());
    this.ticksPerClaim = Math.max(MIN_TICKS_PER_CLAIM, Math.min(MAX_TICKS_PER_CLAIM, settings.claimBatch, settings.concurrency));
  }

  get topic(): string {
    return this.settings.topic;
  }

  /** How long a claim waits for the topic's turn: well within the call's timeout, so the server never commits a claim long after its reply was given up on. */
  private get turnWaitMs(): number {
    return Math.max(1, Math.floor(Math.min(this.settings.leaseMs, this.connection.commandTimeoutMs) / 2));
  }

  /** Running, its last claim reached the database, and its claims have their turns (health). */
  get alive(): boolean {
    return !this.stopped && this.failures === 0 && this.stalledForMs < STALLED_AFTER_MS;
  }

  /** How long every claim has waited in vain for the topic's turn (another session holds the topic's row in turns), ms; 0 when claims have it. */
  get stalledForMs(): number {
    return this.busySince === undefined ? 0 : Date.now() - this.busySince;
  }

  /** The lease its claims give and its renewals bring back. */
  get leaseMs(): number {
    return this.settings.leaseMs;
  }

  get recurring(): boolean {
    return this.settings.recurring === true;
  }

  get holdsLeases(): boolean {
    return this.claims.holdsLeases;
  }

  /** Something is due at `at` (database ms): make sure we look by then. */
  wake(at: number): void {
    if (this.stopped) return;
    this.scanFromStart = true;
    if (this.claimInFlight.active) this.wakeDuringClaim = Math.min(this.wakeDuringClaim, at);
    else this.timer.armAt(at);
  }

  /**
   * A notification named this topic: a write made its earliest due time earlier. Claims now, unless the
   * notifications before it found nothing new (a flood: any role may notify): then at most one claim per gap.
   */
  notify(): void {
    if (this.stopped) return;
    // A drain's claims scan from the first row at least once a second anyway: a notification does not make each scan
    // start over (writes during a drain would otherwise defeat its resume point).
    if (this.resumeAt === null) this.scanFromStart = true;
    this.notified = true;
    if (this.claimInFlight.active || this.notifiedTimer) return;
    // At least a millisecond, as a wake with a due time always had: the notification is read as the write that sent it
    // commits, and the writer's own reply (and what its caller does next) comes first.
    const wait = Math.max(1, this.lastNotifiedClaimAt + this.notifiedGapMs - Date.now());
    this.notifiedTimer = setTimeout(() => {
      this.notifiedTimer = undefined;
      if (this.notified) void this.claim();
    }, wait);
  }

  /** Looks now: at start, after the LISTEN connection came back. */
  kick(): void {
    this.scanFromStart = true;
    void this.claim();
  }

  stop(): void {
    this.stopped = true;
    this.timer.disarm();
    if (this.notifiedTimer) clearTimeout(this.notifiedTimer);
    this.notifiedTimer = undefined;
    // A claim in flight flushes them when it returns.
    if (!this.claimInFlight.active) {
      this.flushAcksLeft();
      this.finishLeft();
    }
  }

  /** Whether a claim's reply was lost and the claim was not asked again yet (see takeLostClaims). */
  get hasLostClaim(): boolean {
    return !this.claimInFlight.active && this.liveLostClaims().length > 0;
  }

  /** The lost claims whose lease may still hold what they took (those past it are the next claim's to take back). */
  private liveLostClaims(): Array<{ id: string; until: number }> {
    const now = Date.now();
    return this.lostClaims.filter((lost) => lost.until > now);
  }

  /**
   * At shutdown, once no claim is in flight: what claims whose reply was lost took, asked for again (their leases
   * renewed), with their ids, to hand back. Without this their actions would wait out their lease, and then run
   * elsewhere only as their next attempt (on the last one, go dead without running). Empty when no reply was lost.
   * The call is bounded by `timeoutMs`; the driver asks again while the database is unreachable.
   */
  async takeLostClaims(timeoutMs: number): Promise<{ claimIds: string[]; members: string[]; tokens: string[] }> {
    const claimIds = this.liveLostClaims().map((lost) => lost.id);
    if (claimIds.length === 0 || this.claimInFlight.active) return { claimIds: [], members: [], tokens: [] };
    const rows = await this.connection.query(this.sql.recover, [this.settings.topic, claimIds, this.settings.leaseMs], timeoutMs);
    this.lostClaims = [];
    return { claimIds, members: rows.map((row) => String(row.member)), tokens: rows.map((row) => String(row.token)) };
  }

  /** The claims whose leases are renewed (runs going on, or outcomes being recorded), and the runs going on, whose arming is checked. */
  leases(): { claimIds: string[]; members: string[]; tokens: string[] } {
    return { claimIds: this.claims.leased, ...this.runningLeases() };
  }

  /** The row a run going on here names (its member), if it is this consumer's. */
  memberOf(delivery: Delivery): string | undefined {
    return this.running.get(delivery)?.member;
  }

  /** Runs still going (handed back at a shutdown that timed out). */
  runningLeases(): { members: string[]; tokens: string[] } {
    return { members: [...this.running.values()].map((run) => run.member), tokens: [...this.running.keys()].map((delivery) => delivery.token) };
  }

  // ---- runs whose arming is gone ----
  /**
   * Runs going on here whose arming is gone (cancelled, re-armed): the
   * consumer is told, so their handlers' signals fire. `members` come from a
   * lease renewal that found their token changed, or from a cancelPrevious
   * made here.
   */
  revoke(members: readonly string[]): void {
    const { consumer } = this;
    if (members.length === 0 || !consumer.revoke) return;
    const gone = new Set(members);
    for (const [delivery, run] of this.running) if (gone.has(run.member)) consumer.revoke(delivery.topic, delivery.key, delivery.token);
  }
  // ---- end runs whose arming is gone ----

  private async claim(): Promise<void> {
    if (this.stopped) {
      // Completions that waited for a claim are recorded anyway: shutdown waits for them.
      this.flushAcksLeft();
      this.finishLeft();
      return;
    }
    if (this.claimInFlight.active) {
      this.claimAgain = true;
      return;
    }
    this.claimInFlight.begin();
    this.claimAgain = false;
    this.wakeDuringClaim = Infinity;
    // A claim answers every notification that came before it; one that came for it is judged by what it finds.
    const forNotification = this.notified;
    this.notified = false;
    if (forNotification) this.lastNotifiedClaimAt = Date.now();
    const armedBefore = this.timer.armedAt;
    this.waitingForRoom = false;
    const { topic, leaseMs } = this.settings;
    const limit = Math.max(0, Math.min(this.settings.claimBatch, this.settings.concurrency - this.used));
    // Slots are taken before the claim and what it does not fill is given back.
    this.used += limit;
    // A claim round trip counts as in flight: if shutdown starts meanwhile, drain waits for what it takes to run.
    this.inFlight.enter();
    let recovered: Row[] = [];
    let carried: AckBatch | undefined;
    let finished: string[] = [];
    let recoveredClaims: Array<{ id: string; until: number }> = [];
    let reply: { head: Row; taken: Row[] };
    let sentAt = 0;
    const claimId = randomBytes(8).toString('base64url');
    const ticksAsked = this.behind ? TICKS_PER_CLAIM_BEHIND : this.ticksPerClaim;
    try {
      this.lostClaims = this.liveLostClaims();
      if (this.lostClaims.length > 0) {
        recovered = await this.connection.query(this.sql.recover, [topic, this.lostClaims.map((lost) => lost.id), leaseMs]);
        // Asked for no more once the claim below returns (what they took runs then); asked for again if it fails.
        const found = new Set(recovered.map((row) => String(row.claim_id)));
        recoveredClaims = this.lostClaims.filter((lost) => found.has(lost.id));
        this.lostClaims = this.lostClaims.filter((lost) => !found.has(lost.id));
        if (this.claimInFlight.abandoned) {
          // Drain stopped waiting during the recover: the claim is not sent (its reply could come after the hand-back),
          // and what the recovered claims took is handed back with the other lost claims.
          this.endAbandoned(recoveredClaims.map((lost) => lost.id), limit);
          // Stopped (drain gave up on it): no claim follows to carry the claims that finished meanwhile.
          this.finishLeft();
          return;
        }
      }
      // How long the server may still commit this claim after its reply is lost: its turn, then its statement.
      this.lostClaims.push({ id: claimId, until: Date.now() + this.turnWaitMs + this.connection.commandTimeoutMs + leaseMs });
      sentAt = Date.now();
      const recoveredSlots = recovered.filter((row) => row.tick !== true).length;
      const resumeAt = this.scanFromStart || sentAt - this.lastFullScanAt >= FULL_SCAN_EVERY_MS ? null : this.resumeAt;
      this.scanFromStart = false;
      if (resumeAt === null) this.lastFullScanAt = sentAt;
      carried = this.acks.takeForClaim();
      finished = this.claims.takeFinished();
      const rows = await this.connection.queryPrepared(this.sql.claim, [
        topic,
        Math.max(0, limit - recoveredSlots),
        leaseMs,
        claimId,
        ticksAsked,
        resumeAt?.dueAt ?? null,
        resumeAt?.member ?? null,
        carried.members,
        carried.tokens,
        finished,
        this.turnWaitMs,
        // Expired leases (a crashed or stalled instance's runs) are looked for when the scan starts at the first row:
        // every claim but a drain's, and a drain's once a second.
        resumeAt === null,
      ]);
      reply = readClaimReply(rows);
      this.failures = 0;
      this.lostClaims = this.lostClaims.filter((lost) => lost.id !== claimId);
      this.clockOffset.observe(int(reply.head.now_ms), sentAt);
      this.settleCarried(carried, reply.head);
    } catch (error) {
      // Completions the claim carried are recorded on their own (deleting by token again is harmless if it did commit).
      if (carried) void this.flushAcks(carried);
      this.flushAcksLeft();
      this.claims.putBack(finished);
      // No claim follows a shutdown to carry them.
      if (this.stopped) this.finishLeft();
      // What the recovered claims took has not run: they are asked for again, as long as the lease just renewed lasts.
      const renewedUntil = Date.now() + leaseMs;
      this.lostClaims.push(...recoveredClaims.map((lost) => ({ id: lost.id, until: renewedUntil })));
      // The server refused the statement itself: it took nothing, and asking for it again would not help.
      if (!(error instanceof DriverUnavailableError)) this.lostClaims = this.lostClaims.filter((lost) => lost.id !== claimId);
      // A wake this claim consumed is not lost with it.
      this.scanFromStart = true;
      this.used -= limit;
      this.claimInFlight.end();
      this.inFlight.leave();
      this.retryLater(error);
      if (this.notified) this.notify();
      return;
    }
    if (this.claimInFlight.abandoned) {
      // Shutdown no longer waits for what this claim, and the lost claims it asked again, took.
      this.endAbandoned([claimId, ...recoveredClaims.map((lost) => lost.id)], limit);
      return;
    }
    this.claimInFlight.end();
    const { head } = reply;
    const claimed = inDueOrder(reply.taken);
    const now = int(head.now_ms);
    this.noteTurn(head.busy === true);
    // Recovered rows name their claim (a column of the recover statement); the claim's own rows are this claim's.
    for (const row of claimed) row.claim_id = claimId;
    const taken = [...recovered, ...claimed];
    for (const row of taken) this.claims.opened(String(row.claim_id), 1);
    // The resume point, after a full claim: the last row it picked, as the claim reports it (ticks are claimed apart,
    // never from the resume point).
    const claimedSlotted = claimed.filter((row) => row.tick !== true);
    this.resumeAt = null;
    if (claimedSlotted.length > 0 && claimedSlotted.length >= limit - recovered.filter((row) => row.tick !== true).length && head.last_due !== null) {
      this.resumeAt = { dueAt: int(head.last_due), member: String(head.last_member) };
    }
    // Revived runs keep their due time, before the resume point.
    if (int(head.revived) > 0) this.scanFromStart = true;
    // A recurring tick holds no handler slot. A claim asked again returns what it took then, which may be more
    // than this claim's slots. (A row that cannot be run gives its slot back in runTaken.)
    const ticks = taken.filter((row) => row.tick === true).length;
    const slotted = taken.length - ticks;
    this.used -= limit - slotted;
    this.runTaken(taken, now);
    if (forNotification) {
      const nextAt = head.next_at === null ? Infinity : int(head.next_at);
      const foundNew = taken.length > 0 || int(head.revived) > 0 || nextAt < armedBefore;
      this.notifiedGapMs = foundNew ? 0 : Math.min(NOTIFIED_GAP_MAX_MS, Math.max(NOTIFIED_GAP_MIN_MS, this.notifiedGapMs * 2));
    }
    // Notifications that came while this claim was on its way get a claim of their own (spaced out as above).
    if (this.notified && !this.stopped) this.notify();
    // The claim's rows come in due order: the first it took for a slot is the one due longest ago.
    this.behind = head.more_due === true && limit > 0 && slotted >= limit && claimedSlotted.length > 0 && now - int(claimedSlotted[0].due_at) >= BEHIND_AFTER_MS;
    if (!this.stopped && this.planNext(head, now, limit, slotted, ticks, ticksAsked)) this.queueClaim();
    // Completions that waited for this claim and have no claim to ride on next. (Finished claims wait for the next
    // claim, at the latest the safety re-check: a statement of their own would be one more commit per action.)
    else this.flushAcksLeft();
  }

  /**
   * Ends a claim drain gave up on: what the claims `claimIds` took is asked for again and handed back with the other
   * lost claims (their leases were just given or renewed), the claim's slots are given back, and the completions that
   * waited for it are recorded with a statement of their own.
   */
  private endAbandoned(claimIds: readonly string[], limit: number): void {
    const until = Date.now() + this.settings.leaseMs;
    this.lostClaims.push(...claimIds.map((id) => ({ id, until })));
    this.used -= limit;
    this.claimInFlight.end();
    this.inFlight.leave();
    this.flushAcksLeft();
  }

  /**
   * What follows a claim: true to claim again at once; otherwise the timer is
   * armed (next due time, next tick, a look again at rows another transaction
   * holds) or the consumer waits for a slot to free.
   */
  private planNext(head: Row, now: number, limit: number, slotted: number, ticks: number, ticksAsked: number): boolean {
    const paused = head.paused === true;
    // A claim that did not get its turn in time took nothing: due rows are left, as when other transactions hold them.
    const moreDue = head.more_due === true && !paused;
    const moreTicks = head.more_ticks === true && !paused;
    const full = limit === 0 || slotted >= limit;
    if (this.claimAgain || int(head.revived) > 0 || (moreTicks && ticks >= ticksAsked)) return true;
    // More is due than this claim could take: claim again while slots are free.
    if (moreDue && full && this.used < this.settings.concurrency) return true;
    if (moreDue && full && !moreTicks) {
      this.waitingForRoom = true;
      // Ticks take no slot: the next one is claimed on time even while every slot is busy.
      const nextTick = paused || head.next_tick === null ? Infinity : int(head.next_tick);
      this.timer.armAt(Math.min(nextTick, this.wakeDuringClaim, now + this.settings.wakeCheckMs));
      return false;
    }
    if (moreDue && full) this.waitingForRoom = true;
    let nextAt = paused ? Infinity : head.next_at === null ? Infinity : int(head.next_at);
    if ((moreDue && !full) || moreTicks) {
      // Due rows another transaction holds: look again shortly, backing off while they stay held, but never later
      // than the next free action is due (a held row must not make the others late).
      nextAt = Math.min(nextAt, now + Math.min(1_000, 25 * 2 ** Math.min(this.lockedLooks++, 6)));
    } else {
      this.lockedLooks = 0;
    }
    // Never sleep longer than the safety re-check, in case a notification is lost.
    this.timer.armAt(Math.min(nextAt, this.wakeDuringClaim, now + this.settings.wakeCheckMs));
    return false;
  }

  /** Starts the handlers of what a claim took (its slots are already counted). */
  private runTaken(taken: readonly Row[], now: number): void {
    try {
      for (const row of taken) {
        const tick = row.tick === true;
        try {
          this.run(row, now, tick);
        } catch (error) {
          this.logger.error(`Cannot run "${this.settings.topic}" / "${String(row.key)}": ${describeError(error)}`);
          if (!tick) this.freeSlot();
          this.runOver(String(row.claim_id), { member: String(row.member), token: String(row.token) });
        }
      }
    } finally {
      // Entered when the claim was sent: a shutdown meanwhile waits for what it took to run.
      this.inFlight.leave();
    }
  }

  /** Whether this claim had the topic's turn: claims that wait in vain for STALLED_AFTER_MS are logged (and health says so). */
  private noteTurn(busy: boolean): void {
    if (!busy) {
      if (this.stallLogged) this.logger.log(`Claims of "${this.settings.topic}" have their turn again`);
      this.busySince = undefined;
      this.stallLogged = false;
      return;
    }
    this.busySince ??= Date.now() - this.turnWaitMs;
    if (!this.stallLogged && this.stalledForMs >= STALLED_AFTER_MS) {
      this.stallLogged = true;
      this.logger.warn(
        `Claims of "${this.settings.topic}" have waited ${Math.round(this.stalledForMs / 1000)} s for the topic's turn: another session holds the lock of its row in the driver's turns table (see pg_locks); nothing of the topic runs here meanwhile`,
      );
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
    if (this.failures === 1 || this.failures % 20 === 0) {
      this.logger.warn(`Claiming "${this.settings.topic}" failed (${describeError(error)}); retrying`);
    }
    this.timer.armAt(Date.now() + this.clockOffset.value + retryDelay(this.failures));
  }

  private run(row: Row, now: number, tick: boolean): void {
    const delivery = toDelivery(this.settings.topic, row, now);
    const run: RunRef = { member: String(row.member), claimId: String(row.claim_id) };
    this.running.set(delivery, run);
    this.inFlight.enter();
    runDelivery(this.consumer, delivery, (outcome) => {
      let recorded: Promise<boolean>;
      try {
        this.running.delete(delivery);
        this.settling.set(delivery, run);
        if (!tick) this.freeSlot();
        recorded = this.settle(delivery, run.member, outcome);
      } catch (error) {
        // The run is over even so: it must not hold drain or renew its lease for ever. The dispatcher logs the error.
        this.doneWith(delivery, run, false);
        throw error;
      }
      void recorded.then(
        (ok) => this.doneWith(delivery, run, ok),
        () => this.doneWith(delivery, run, false),
      );
    });
  }

  private freeSlot(): void {
    this.used--;
    if (this.waitingForRoom) {
      this.waitingForRoom = false;
      this.queueClaim();
    }
  }

  private doneWith(delivery: Delivery, run: RunRef, recorded: boolean): void {
    this.settling.delete(delivery);
    this.runOver(run.claimId, recorded ? undefined : { member: run.member, token: delivery.token });
    this.inFlight.leave();
  }

  // ---- claims whose runs are over ----
  /**
   * One run of a claim is over; a claim whose runs are all over has its runs row deleted by the next claim. A run
   * whose outcome was not recorded (`unrecorded`) is handed back now as its next attempt, as its lease running out
   * would (the claim's lease is still renewed for its other runs); if that fails too, it comes back once the claim's
   * lease runs out.
   */
  private runOver(claimId: string, unrecorded?: { member: string; token: string }): void {
    this.claims.runOver(claimId, unrecorded === undefined);
    // No claim follows a shutdown to carry them.
    if (this.stopped) this.finishLeft();
    if (unrecorded === undefined) return;
    const { topic } = this.settings;
    // In flight as finishLeft's statement is, for the same reason.
    this.inFlight.enter();
    void this.connection
      .queryPrepared(this.sql.retry, [topic, unrecorded.member, unrecorded.token, 0])
      .then(
        (rows) => {
          if (rows.length > 0) this.wake(int(rows[0].due_at));
        },
        (error: unknown) => this.logger.debug(`Could not hand "${topic}" / "${unrecorded.member}" back (it comes back when its claim's lease runs out): ${describeError(error)}`),
      )
      .finally(() => this.inFlight.leave());
  }

  /**
   * At shutdown (and for claims that finish after it): deletes the runs rows of the finished claims. If it fails, they
   * go when their lease runs out (a claim then finds them over). Counted in flight, so drain waits for it: a
   * statement still queued when close ends the pool would never be sent, and would hold the process until its bound.
   */
  private finishLeft(): void {
    const finished = this.claims.takeFinished();
    if (finished.length === 0) return;
    this.inFlight.enter();
    void this.connection
      .queryPrepared(this.sql.finish, [this.settings.topic, finished])
      .catch((error: unknown) => {
        this.logger.debug(`Could not delete the runs rows of ${finished.length} finished claim(s) of "${this.settings.topic}" (their leases will run out): ${describeError(error)}`);
      })
      .finally(() => this.inFlight.leave());
  }
  // ---- end claims whose runs are over ----

  /** Records a run's outcome: true once recorded, false if it could not be (its lease then brings the run back). */
  private settle(delivery: Delivery, member: string, outcome: DeliveryOutcome): Promise<boolean> {
    const { topic } = this.settings;
    const what = `"${topic}" / "${delivery.key}"`;
    // An occurrence of a recurring schedule: the outcome statement also records it as the schedule's last run.
    const startedAt = delivery.key.includes(SERIES_SEPARATOR) ? delivery.firedAt : null;
    // A transactional run's completion committed in its own transaction: nothing is left to write.
    if (outcome.kind === 'completed' && outcome.committed === true) return Promise.resolve(true);
    if (outcome.kind === 'completed') return this.ack(member, delivery.token, startedAt);
    if (outcome.kind === 'retry') {
      const [sql, params] = startedAt === null ? [this.sql.retry, [topic, member, delivery.token, outcome.delayMs]] : [this.sql.retryOccurrence, [topic, member, delivery.token, outcome.delayMs, startedAt]];
      return this.record(sql, params, what, (rows) => {
        // The retry is this topic's, consumed here: the local timer is told, no notification is needed.
        if (rows.length > 0) this.wake(int(rows[0].due_at));
      });
    }
    if (startedAt === null) return this.record(this.sql.bury, [topic, member, delivery.token, outcome.error], what);
    return this.record(this.sql.buryOccurrence, [topic, member, delivery.token, outcome.error, startedAt], what);
  }

  /**
   * Records a completed run. Completions are recorded together: by the next
   * claim (a drain's claims follow each other, so each carries the runs that
   * ended while the one before it was on its way), or else by one statement
   * of their own at the end of the turn.
   */
  private ack(member: string, token: string, startedAt: number | null): Promise<boolean> {
    const batch = this.acks.add(member, token, startedAt);
    if (!this.acks.flushQueued) {
      this.acks.flushQueued = true;
      // Queued after the slot's claim (freeSlot runs first): a claim sent in this turn has taken the plain ones by then.
      setImmediate(() => {
        this.acks.flushQueued = false;
        // A claim on its way: when it returns, the plain ones go with the claim that follows it, or alone (flushAcksLeft).
        const left = this.claimInFlight.active ? this.acks.takeOccurrences() : this.acks.takeAll();
        if (left) void this.flushAcks(left);
      });
    }
    return batch;
  }

  /**
   * The claim deleted the completions it carried, unless one of their rows was held by another transaction (your
   * transaction cancelling or replacing that key): then it deleted none, waiting at most 1 ms, and the batch goes
   * with the complete statement, which waits for the lock as any write does.
   */
  private settleCarried(carried: AckBatch, head: Row): void {
    if (int(head.completed) >= carried.size) carried.recorded();
    else void this.flushAcks(carried);
  }

  /** Every completion waiting, recorded now with a statement of its own. */
  private flushAcksLeft(): void {
    const left = this.acks.takeAll();
    if (left) void this.flushAcks(left);
  }

  /** Records completions with a statement of their own (the one that also writes last runs if a recurring occurrence is among them). */
  private async flushAcks(batch: AckBatch): Promise<void> {
    if (batch.size === 0) return batch.recorded();
    const { topic } = this.settings;
    const params = [topic, batch.members, batch.tokens];
    const what = `${batch.members.length} completed run(s) of "${topic}"`;
    if (batch.startedAt.every((startedAt) => startedAt === null)) batch.recorded(await this.record(this.sql.complete, params, what));
    else batch.recorded(await this.record(this.sql.completeOccurrences, [...params, batch.startedAt], what));
  }

  /** Runs an outcome statement, retrying while the database is away: true once it ran; false if it never could, and the run's lease then expires and it is redone. */
  private async record(sql: string, params: unknown[], what: string, then?: (rows: Row[]) => void): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      try {
        const rows = await this.connection.queryPrepared(sql, params);
        then?.(rows);
        return true;
      } catch (error) {
        // A connection closed at shutdown never comes back: retrying would only keep the process alive.
        if (!(error instanceof DriverUnavailableError) || attempt >= 50 || this.connection.isClosed) {
          this.logger.error(`Could not record the outcome of ${what}: ${describeError(error)}; it will run again when its lease expires`);
          return false;
        }
        await new Promise((resolve) => setTimeout(resolve, retryDelay(attempt)));
      }
    }
  }
}
