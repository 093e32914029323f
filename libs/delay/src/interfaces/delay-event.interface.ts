export type DelayEventType =
  | 'scheduled'
  | 'collected'
  | 'rescheduled'
  | 'cancelled'
  | 'fired'
  | 'completed'
  | 'failed'
  | 'retrying'
  | 'dead'
  | 'redriven'
  | 'timedOut'
  | 'paused'
  | 'resumed'
  /** Redis came back without its data (topic '*', key ''): actions pending before may be lost. */
  | 'storeReset'
  /** At startup: Redis's maxmemory-policy lets it delete keys when full, pending actions included (topic '*', key ''); `error` says which policy. */
  | 'storeEvicting';

/** One thing that happened to an action, as `DelayService.events$` reports it. */
export interface DelayEvent {
  readonly type: DelayEventType;
  readonly topic: string;
  /** Empty for the events of a whole topic: paused, resumed. */
  readonly key: string;
  readonly at: Date;
  readonly attempt?: number;
  readonly dueAt?: Date;
  /** The handler's error message, on failed / retrying / dead / timedOut; what was seen, on storeReset and storeEvicting. */
  readonly error?: string;
  /** For a batch: how many items it holds. */
  readonly size?: number;
  /** On retrying: when the next attempt is due. */
  readonly retryAt?: Date;
}
