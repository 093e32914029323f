/**
 * Struct-of-arrays storage for the wheel's actions. An action is an integer
 * index into parallel typed arrays rather than an object, so a million
 * pending actions cost a few dozen bytes each and give the GC nothing to
 * trace but two string arrays. Indices are recycled through a free list.
 */

/** End of a list. */
export const NIL = -1;

/** Values of `where[i]` below zero; zero and above is a wheel bucket. */
export const FREE = -1;
export const READY = -2;
export const RUNNING = -3;
/** Running, but cancelled or re-armed meanwhile: its outcome is dropped. */
export const ORPHANED = -4;

const INITIAL_CAPACITY = 1024;
/**
 * The arena grows by a quarter at a time, not by doubling: a doubling arena
 * is up to half empty right after it grows (1.1M actions in room for 2M),
 * which made the bytes per action swing with N. A quarter keeps the slack
 * under 20% at any size. A smaller step (an eighth) saves a few bytes more
 * but allocates and copies about 9 times the final size on the way up,
 * against 5 times: every new array is fresh memory the system has to map,
 * which cost filling a wheel more than the copying itself.
 */
const GROWTH_SHIFT = 2;

/** What a batch (from collect) holds in place of a payload. */
export interface BatchBuffer {
  /** Items as JSON texts, in arrival order. */
  readonly items: string[];
  readonly openedAt: number;
  /** Its size against maxBatchBytes: the sum of batchItemBytes of its items. */
  bytes: number;
}

/** A single action's JSON payload, a batch's buffer, or nothing. */
export type ArenaPayload = string | BatchBuffer | undefined;

export function isBatch(payload: ArenaPayload): payload is BatchBuffer {
  return typeof payload === 'object';
}

export class ActionArena {
  dueAt = new Float64Array(INITIAL_CAPACITY);
  next = new Int32Array(INITIAL_CAPACITY);
  prev = new Int32Array(INITIAL_CAPACITY);
  /** A wheel bucket (>= 0), or FREE / READY / RUNNING / ORPHANED. */
  where = new Int16Array(INITIAL_CAPACITY).fill(FREE);
  attempt = new Uint16Array(INITIAL_CAPACITY);
  /** Changes on every arming, so a delivery can be told from a later arming of the same slot. */
  token = new Uint32Array(INITIAL_CAPACITY);
  topicId = new Uint16Array(INITIAL_CAPACITY);
  keys: Array<string | undefined> = [];
  payloads: ArenaPayload[] = [];
  /** Trace contexts (W3C traceparent) by index, for the few actions that carry one: nothing is paid without tracing. */
  readonly traces = new Map<number, string>();

  private capacity = INITIAL_CAPACITY;
  private used = 0;
  private freeHead = NIL;
  private tokenSeq = 0;

  alloc(topicId: number, key: string, payload: ArenaPayload, dueAt: number): number {
    let i = this.freeHead;
    if (i !== NIL) {
      this.freeHead = this.next[i];
    } else {
      if (this.used === this.capacity) this.grow();
      i = this.used++;
    }
    this.topicId[i] = topicId;
    this.keys[i] = key;
    this.payloads[i] = payload;
    this.dueAt[i] = dueAt;
    this.attempt[i] = 1;
    this.rearm(i);
    this.next[i] = NIL;
    this.prev[i] = NIL;
    return i;
  }

  /** Gives the action a new token: outcomes of earlier runs no longer match it. */
  rearm(i: number): void {
    this.tokenSeq = (this.tokenSeq + 1) >>> 0;
    this.token[i] = this.tokenSeq;
  }

  /** Sets or clears the trace an action carries. */
  setTrace(i: number, trace: string | undefined): void {
    if (trace !== undefined) this.traces.set(i, trace);
    else if (this.traces.size > 0) this.traces.delete(i);
  }

  free(i: number): void {
    if (this.traces.size > 0) this.traces.delete(i);
    this.keys[i] = undefined;
    this.payloads[i] = undefined;
    this.where[i] = FREE;
    this.next[i] = this.freeHead;
    this.freeHead = i;
  }

  private grow(): void {
    const capacity = this.capacity + Math.max(INITIAL_CAPACITY, this.capacity >>> GROWTH_SHIFT);
    this.dueAt = copy(new Float64Array(capacity), this.dueAt);
    this.next = copy(new Int32Array(capacity), this.next);
    this.prev = copy(new Int32Array(capacity), this.prev);
    this.where = copy(new Int16Array(capacity).fill(FREE), this.where);
    this.attempt = copy(new Uint16Array(capacity), this.attempt);
    this.token = copy(new Uint32Array(capacity), this.token);
    this.topicId = copy(new Uint16Array(capacity), this.topicId);
    this.capacity = capacity;
  }
}

function copy<T extends { set(source: ArrayLike<number>): void }>(target: T, source: ArrayLike<number>): T {
  target.set(source);
  return target;
}

/** A FIFO of arena indices, linked through the arena's next/prev arrays. */
export class ActionQueue {
  head = NIL;
  tail = NIL;
  size = 0;

  push(arena: ActionArena, i: number): void {
    arena.next[i] = NIL;
    arena.prev[i] = this.tail;
    if (this.tail === NIL) this.head = i;
    else arena.next[this.tail] = i;
    this.tail = i;
    this.size++;
  }

  shift(arena: ActionArena): number {
    const i = this.head;
    if (i !== NIL) this.remove(arena, i);
    return i;
  }

  remove(arena: ActionArena, i: number): void {
    const { next, prev } = arena;
    if (prev[i] === NIL) this.head = next[i];
    else next[prev[i]] = next[i];
    if (next[i] === NIL) this.tail = prev[i];
    else prev[next[i]] = prev[i];
    this.size--;
  }
}
