import { ActionKindConflictError } from '../../errors/action-kind-conflict.error';
import { AdvanceSeriesCommand, AdvanceSeriesResult, SeriesBlocker } from '../../interfaces/delay-driver.interface';
import { resolveDueAt } from '../../validation/due-time';
import { ActionArena, ArenaPayload, isBatch, RUNNING } from './action-arena';
import { TopicState } from './wheel-topic-state';

/** What a series step needs of the wheel driver: its arena and clock, and its own arming and cancelling. */
export interface WheelSeriesHost {
  readonly arena: ActionArena;
  readonly horizonMs: number;
  now(): number;
  /** Files `key` (a new arming, or `existing` re-armed) due at `dueAt`. */
  arm(state: TopicState, key: string, payload: ArenaPayload, dueAt: number, existing: number | undefined): number;
  /** Cancels `key` of `topic`: whether it was pending. */
  cancel(topic: string, key: string): boolean;
}

/**
 * One step of a recurring series on the wheel (the advanceSeries contract in
 * delay-driver.interface.ts): the condition checked, the overlap policy
 * applied to the occurrences, the tick re-armed, left or removed. It is
 * synchronous, so nothing else can come between the check and the writes.
 */
export function stepSeries(host: WheelSeriesHost, state: TopicState, command: AdvanceSeriesCommand): AdvanceSeriesResult {
  const { arena } = host;
  const tick = state.index.get(command.key);
  const { expect } = command;
  const holds =
    'token' in expect
      ? tick !== undefined && arena.where[tick] === RUNNING && String(arena.token[tick]) === expect.token
      : 'payload' in expect
        ? tick !== undefined && !isBatch(arena.payloads[tick]) && arena.payloads[tick] === expect.payload
        : tick === undefined;
  if (!holds) return { applied: false, created: [], skipped: [], cancelled: [] };
  if ('absent' in expect) state.runs.delete(command.key);
  if (tick !== undefined && isBatch(arena.payloads[tick])) throw new ActionKindConflictError(command.topic, command.key, 'batch');
  const now = host.now();
  if (command.orphanGraceMs !== undefined && command.orphanGraceMs > 0) {
    const mark = state.declared.get(command.key);
    if (mark === undefined) {
      state.declared.set(command.key, now + command.orphanGraceMs);
    } else if (mark < now) {
      // No running instance declares it any more: removed, as a removeRecurring would.
      if (tick !== undefined) host.cancel(command.topic, command.key);
      state.forgetSeries(command.key);
      return { applied: true, created: [], skipped: [], cancelled: [], orphaned: true };
    }
  }
  // The series' previous occurrences still waiting or running (a cancelled or finished one has left the index).
  let alive: string[] = [];
  // The one named as the reason of a refusal: the first running, else the latest waiting.
  let blocker: SeriesBlocker | undefined;
  for (const key of state.series.get(command.key) ?? []) {
    const i = state.index.get(key);
    if (i === undefined) continue;
    alive.push(key);
    const running = arena.where[i] === RUNNING;
    if (blocker === undefined || blocker.state === 'waiting') {
      blocker = { occurrenceKey: key, state: running ? 'running' : 'waiting', dueAt: arena.dueAt[i], attempt: arena.attempt[i] };
    }
  }
  const created: string[] = [];
  let skipped: string[] = [];
  const cancelled: string[] = [];
  let nextDueAt: number | undefined;
  const { overlap } = command;
  // 'bufferOne' never lets two occurrences of a series be alive: with one alive, the new one is held back (whileAlive) or refused.
  const refused = command.occurrences.length > 0 && alive.length > 0 && (overlap === 'skip' || overlap === 'bufferOne');
  const held = refused && overlap === 'bufferOne' && command.whileAlive !== undefined;
  if (command.occurrences.length > 0 && overlap === 'cancelPrevious') {
    for (const key of alive) if (host.cancel(command.topic, key)) cancelled.push(key);
    alive = [];
  }
  if (held) {
    skipped = [...(command.whileAlive as NonNullable<AdvanceSeriesCommand['whileAlive']>).skipped];
  } else {
    for (const occurrence of command.occurrences) {
      if (refused || state.index.get(occurrence.key) !== undefined) {
        skipped.push(occurrence.key);
        continue;
      }
      const dueAt = resolveDueAt(occurrence.due, now, Infinity, host.horizonMs);
      host.arm(state, occurrence.key, occurrence.payload, dueAt, undefined);
      created.push(occurrence.key);
    }
  }
  if (refused && skipped.length > 0) state.runs.set(command.key, { outcome: 'skipped', occurrenceKey: skipped[skipped.length - 1], startedAt: undefined, attempt: 0, at: now, blockedBy: blocker });
  alive.push(...created);
  const next = held ? command.whileAlive?.next : command.next;
  if (next === null) {
    if (tick !== undefined) host.cancel(command.topic, command.key);
    state.forgetSeries(command.key);
  } else {
    if (next !== undefined) {
      state.ticks.add(command.key);
      nextDueAt = resolveDueAt(next.due, now, Infinity, host.horizonMs);
      host.arm(state, command.key, next.payload, nextDueAt, state.index.get(command.key));
    }
    if (alive.length > 0) state.series.set(command.key, alive);
    else state.series.delete(command.key);
  }
  return { applied: true, created, skipped, cancelled, nextDueAt, ...(refused ? { blockedBy: blocker } : {}) };
}
