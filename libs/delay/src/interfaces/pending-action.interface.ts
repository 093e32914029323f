/** Where an action is in its life: waiting for its due time, or its handler is running. */
export type ActionState = 'waiting' | 'running';

/** A pending action as `get` and `list` report it. */
export interface PendingAction<TPayload = unknown, TItem = unknown> {
  readonly topic: string;
  readonly key: string;
  readonly payload: TPayload | undefined;
  /**
   * Set for a batch (from collect): its items so far, in arrival order.
   * `list` shows only the first 10 (LISTED_BATCH_ITEMS); `get` shows all.
   */
  readonly items?: TItem[];
  /** Set for a batch: how many items it holds (more than `items` shows, in a listing of a large batch). */
  readonly size?: number;
  readonly dueAt: Date;
  /** The attempt its next (or current) run is: 1 for a first run. */
  readonly attempt: number;
  readonly state: ActionState;
  /** Its topic is paused: it will not start until the topic is resumed. */
  readonly paused: boolean;
}

/** An action that used up its attempts, kept until it is re-driven. */
export interface DeadAction<TPayload = unknown, TItem = unknown> {
  /** Give this to redrive. The key for a single action; key plus a suffix for a batch. */
  readonly id: string;
  readonly topic: string;
  readonly key: string;
  readonly payload: TPayload | undefined;
  readonly dueAt: Date;
  /** For a batch: its items; `listDead` shows only the first 10 (LISTED_BATCH_ITEMS). */
  readonly items?: TItem[];
  /** For a batch: how many items it holds. */
  readonly size?: number;
  readonly attempts: number;
  readonly error: string;
  readonly diedAt: Date;
}

export interface PageRequest {
  /** How many to skip; default 0, at most 1,000,000,000 (InvalidPageError beyond: every driver can read that far). */
  readonly offset?: number;
  /** How many at most; default 100, at most 1000. */
  readonly limit?: number;
}

export interface Page<T> {
  readonly items: T[];
  readonly total: number;
  readonly offset: number;
  readonly limit: number;
}
