import { SeriesRunRecord, StoredDeadAction } from '../../interfaces/delay-driver.interface';
import { ActionArena, ActionQueue } from './action-arena';
import { KeyIndex } from './key-index';
import { TickKeys } from './tick-keys';

/** Per-topic bookkeeping: the key index, the due queue, the dead set. */
export class TopicState {
  /** key → arena index, for every waiting or running action, and every open batch. */
  readonly index: KeyIndex;
  /**
   * Batches that are closed (full, or handed to their handler) but not done:
   * no longer reachable by key, since new items for the key open a new batch.
   */
  readonly detached = new Set<number>();
  /** Due actions waiting for a free handler slot, oldest first. */
  readonly ready = new ActionQueue();

  /** The ready queue `key` waits in. */
  queueFor(key: string): ActionQueue {
    return this.ticks.size > 0 && this.ticks.has(key) ? this.readyTicks : this.ready;
  }
  readonly dead = new Map<string, StoredDeadAction>();
  /** Handlers allowed at once here; 0 while no handler consumes the topic. */
  concurrency = 0;
  /** Runs whose outcome is awaited, orphaned ones included. */
  running = 0;
  /** Of those, runs cancelled or re-armed meanwhile (no longer pending). */
  orphans = 0;
  paused = false;
  warnedUnhandled = false;
  /** Recurring series key → keys of its occurrences that may still be waiting or running. */
  readonly series = new Map<string, string[]>();
  /** Keys of the recurring series' ticks: they wait in their own queue and take no handler slot. */
  readonly ticks = new TickKeys();
  readonly readyTicks = new ActionQueue();
  /** Of `running`, the ticks. */
  runningTicks = 0;
  /** Recurring series key → its last run (recorded with the outcome of an occurrence, or a skip). */
  readonly runs = new Map<string, SeriesRunRecord>();
  /** Recurring series key → until when a running instance declares it in code (declareSeries). */
  readonly declared = new Map<string, number>();

  constructor(
    readonly id: number,
    readonly name: string,
    arena: ActionArena,
  ) {
    this.index = new KeyIndex(arena);
  }

  /** A removed series: its tick is gone already; its bookkeeping goes too. */
  forgetSeries(key: string): void {
    this.series.delete(key);
    this.ticks.delete(key);
    this.runs.delete(key);
    this.declared.delete(key);
  }
}
