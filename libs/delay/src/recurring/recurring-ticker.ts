import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { DELAY_DRIVER, DELAY_RESOLVED_OPTIONS } from '../delay.constants';
import { ResolvedDelayOptions } from '../delay.module-definition';
import { DelayEventBus } from '../delay-event.bus';
import { DelayHandlerRegistry } from '../delay-handler.registry';
import { UnsupportedOperationError } from '../errors/unsupported-operation.error';
import { AdvanceSeriesCommand, DelayDriver, Delivery, DeliveryOutcome, SeriesOccurrence } from '../interfaces/delay-driver.interface';
import { describeError } from '../utils/describe-error';
import { quoteInput } from '../utils/quote-input';
import { CompiledRecurrences } from './compiled-recurrences';
import { occurrenceKey } from './occurrence-key';
import { decodeSeriesState, encodeSeriesState, SeriesState } from './series-state';
import { seriesJitterMs } from './series-jitter';
import { planTick } from './tick-plan';
import { WarningDigest, type WarningKind } from './warning-digest';
import { BUFFER_RECHECK_MS, planBufferOne } from './buffer-one';
import { describeBlocker, recurringBlocker } from './recurring-blocker';

/** A tick whose advance failed (store unreachable) is tried again this soon; a tick is never dead-lettered. */
export const TICK_RETRY_MS = 1_000;
/** A paused schedule's tick is parked this far ahead; resume brings it back. */
export const PAUSED_TICK_DELAY_MS = 50 * 365 * 86_400_000;
/** Repeated tick warnings (missed runs, failed ticks) are written at most once per topic and kind in this interval, with counts. */
export const TICK_WARNING_INTERVAL_MS = 10_000;

const seconds = (ms: number): string => `${ms / 1000} s`;

const MISSED: WarningKind = {
  one: (topic, key, count, detail) => `Recurring ${quoteInput(topic)} / ${quoteInput(key)}: ${count} occurrence(s) missed (${detail})`,
  many: (topic, tally, intervalMs) =>
    `Recurring ${quoteInput(topic)}: ${tally.total} more occurrence(s) missed by ${tally.events} tick(s) in the last ${seconds(intervalMs)}; the latest ${quoteInput(tally.lastKey)} (${tally.lastDetail})`,
};

const FAILED: WarningKind = {
  one: (topic, key, _count, detail) => `Tick of recurring ${quoteInput(topic)} / ${quoteInput(key)} failed, trying again in ${TICK_RETRY_MS} ms: ${detail}`,
  many: (topic, tally, intervalMs) =>
    `${tally.events} more tick(s) of recurring ${quoteInput(topic)} failed in the last ${seconds(intervalMs)}, each tried again in ${TICK_RETRY_MS} ms; the latest ${quoteInput(tally.lastKey)}: ${tally.lastDetail}`,
};

/**
 * Runs the tick of a recurring series, for every driver alike: from the
 * tick's state and the driver's time (the delivery's `firedAt`), plans the
 * occurrences to fire and the next tick, and applies both with the driver's
 * one atomic advanceSeries, conditioned on the tick's token. A tick run twice
 * (a crash between claim and advance, a lost reply) plans the same thing, and
 * only one of the runs can hold the token.
 */
@Injectable()
export class RecurringTicker implements OnApplicationShutdown {
  private readonly logger = new Logger(RecurringTicker.name);
  private readonly recurrences = new CompiledRecurrences();
  private readonly warnings = new WarningDigest(this.logger, TICK_WARNING_INTERVAL_MS);

  constructor(
    @Inject(DELAY_DRIVER) private readonly driver: DelayDriver,
    private readonly events: DelayEventBus,
    @Inject(DELAY_RESOLVED_OPTIONS) private readonly options: ResolvedDelayOptions,
    private readonly registry: DelayHandlerRegistry,
  ) {}

  /** Never rejects: a failure becomes a retry of the tick. */
  async tick(delivery: Delivery): Promise<DeliveryOutcome> {
    try {
      await this.advance(delivery);
      return { kind: 'completed' };
    } catch (error) {
      const message = describeError(error);
      this.warnings.note(FAILED, 'failed', delivery.topic, delivery.key, 1, message);
      return { kind: 'retry', delayMs: TICK_RETRY_MS, error: message };
    }
  }

  private async advance(delivery: Delivery): Promise<void> {
    const { driver } = this;
    if (!driver.advanceSeries) throw new UnsupportedOperationError('recurring actions', driver.name);
    const { topic, key } = delivery;
    const state = decodeSeriesState(delivery.payload);
    if (!state) {
      // Not a tick this library armed (an action scheduled by hand on a recurring topic): nothing to advance.
      this.logger.error(`Action ${quoteInput(key)} of recurring topic ${quoteInput(topic)} is no schedule's tick; it is dropped`);
      return;
    }
    const now = delivery.firedAt;
    if (state.paused) {
      await driver.advanceSeries({ topic, key, expect: { token: delivery.token }, occurrences: [], overlap: state.overlap, next: { due: { delayMs: PAUSED_TICK_DELAY_MS }, payload: delivery.payload as string } });
      return;
    }
    const from = state.reset || state.last === null ? Math.max(state.last ?? -Infinity, delivery.dueAt) : state.last;
    const plan = planTick(this.recurrences.recurrence(state.spec), state.missed, from, now);
    const jitter = seriesJitterMs(topic, key, state.jitterMs);
    const occurrenceAt = (instant: number): SeriesOccurrence => ({ key: occurrenceKey(key, instant), due: { atMs: instant + jitter }, payload: state.payload });
    // The state moved on, without the held-back instant: built field by field (one object shape, no spread or rest per tick).
    const nextState: SeriesState = {
      v: 1,
      spec: state.spec,
      missed: state.missed,
      overlap: state.overlap,
      jitterMs: state.jitterMs,
      payload: state.payload,
      last: plan.last,
      buffered: undefined,
      reset: false,
      paused: state.paused,
      declared: state.declared,
      orphan: state.orphan,
    };
    // The tick's next arming, holding `buffered` back if given: then it looks again soon, whatever the recurrence says.
    const armed = (buffered: number | undefined): AdvanceSeriesCommand['next'] => {
      if (buffered === undefined) return plan.next === null ? null : { due: { atMs: plan.next }, payload: encodeSeriesState(nextState) };
      return { due: { atMs: Math.min(plan.next ?? Infinity, now + BUFFER_RECHECK_MS) }, payload: encodeSeriesState({ ...nextState, buffered }) };
    };
    let occurrences = plan.fire.map(occurrenceAt);
    let next = armed(undefined);
    let whileAlive: AdvanceSeriesCommand['whileAlive'];
    let droppedIfFree = 0;
    const buffer = state.overlap === 'bufferOne' ? planBufferOne(state.buffered, plan.fire) : undefined;
    if (buffer) {
      occurrences = [occurrenceAt(buffer.free.create)];
      next = armed(buffer.free.buffered);
      droppedIfFree = buffer.free.skipped.length;
      whileAlive = { next: armed(buffer.alive.buffered) as NonNullable<AdvanceSeriesCommand['next']>, skipped: buffer.alive.skipped.map((instant) => occurrenceKey(key, instant)) };
    }
    const command: AdvanceSeriesCommand = {
      topic,
      key,
      expect: { token: delivery.token },
      occurrences,
      overlap: state.overlap,
      next,
      whileAlive,
      // Declared in code and removable: the driver removes it instead if no running instance has declared it for the grace.
      // Not when this instance declares it itself: it is no orphan, whatever its mark says after a long store outage.
      orphanGraceMs: state.declared && state.orphan !== 'keep' && driver.declareSeries && !this.declaresItself(topic, key) ? this.options.recurringOrphanGraceMs : undefined,
    };
    const result = await driver.advanceSeries(command);
    if (!result.applied) return;
    if (result.orphaned) {
      this.logger.warn(`Recurring ${quoteInput(topic)} / ${quoteInput(key)} is declared by no running instance any more (for ${this.options.recurringOrphanGraceMs} ms); removed (orphan policy 'remove')`);
      this.events.emit(() => ({ type: 'cancelled', topic, key }));
      return;
    }
    const { events } = this;
    if (plan.missed > 0) {
      this.warnings.note(MISSED, 'missed', topic, key, plan.missed, `policy ${state.missed.kind}${plan.missedExact ? '' : ', counted in part and estimated'}`);
      events.emit(() => ({ type: 'recurringMissed', topic, key, size: plan.missed }));
    }
    if (result.created.length > 0) events.emit(() => ({ type: 'recurringFired', topic, key, size: result.created.length }));
    const held = whileAlive !== undefined && result.blockedBy !== undefined;
    const skipped = result.skipped.length + (held ? 0 : droppedIfFree);
    const { blockedBy } = result;
    if (skipped > 0) {
      if (blockedBy) this.logger.log(`Recurring ${quoteInput(topic)} / ${quoteInput(key)}: ${skipped} occurrence(s) skipped (overlap ${state.overlap}): ${describeBlocker(blockedBy)}`);
      events.emit(() => ({ type: 'recurringSkipped', topic, key, size: skipped, ...(blockedBy ? { blockedBy: recurringBlocker(blockedBy) } : {}) }));
    }
    for (const cancelled of result.cancelled) events.emit(() => ({ type: 'cancelled', topic, key: cancelled }));
    // (Held back, the tick stays: it still has the occurrence it holds to create.)
    if (!held && next === null) this.logger.log(`Recurring ${quoteInput(topic)} / ${quoteInput(key)} has no further occurrence; removed`);
  }

  /** The warnings gathered and not yet written. */
  onApplicationShutdown(): void {
    this.warnings.flush();
  }

  private declaresItself(topic: string, key: string): boolean {
    return this.registry.get(topic)?.recurring?.declared?.key === key;
  }
}
