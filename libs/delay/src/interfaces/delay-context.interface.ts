/** What an @OnDelayExpired handler receives. */
export interface DelayContext<TPayload = unknown> {
  readonly topic: string;
  readonly key: string;
  readonly payload: TPayload | undefined;
  /** When the action was due. */
  readonly dueAt: Date;
  /** When this run started. */
  readonly firedAt: Date;
  /** 1 for the first run, 2 for the first retry, and so on. */
  readonly attempt: number;
}
