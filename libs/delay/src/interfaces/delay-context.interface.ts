/** What an @OnDelayExpired handler receives. */
export interface DelayContext<TPayload = unknown, TItem = unknown> {
  readonly topic: string;
  readonly key: string;
  readonly payload: TPayload | undefined;
  /** For a batch (from collect): its items in arrival order. */
  readonly items?: TItem[];
  /** When the action was due. */
  readonly dueAt: Date;
  /** When this run started. */
  readonly firedAt: Date;
  /** 1 for the first run, 2 for the first retry, and so on. */
  readonly attempt: number;
}
