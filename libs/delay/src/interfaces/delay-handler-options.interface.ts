import { Duration } from '../time/duration';

/** How long to wait before retry number n (n = 1 for the first retry). */
export type BackoffOption =
  | Duration
  | { readonly type: 'fixed'; readonly delay: Duration }
  | { readonly type: 'exponential'; readonly delay: Duration; readonly maxDelay?: Duration };

export interface DelayHandlerOptions {
  /** Runs in all, the first included, before the action is dead-lettered. Default 3. */
  readonly attempts?: number;
  /** Wait between failed runs. Default exponential from 1s, at most 1h. */
  readonly backoff?: BackoffOption;
  /** Handlers of this topic running at once in this process. Default 10. */
  readonly concurrency?: number;
  /**
   * How long one run may take. A run still going then counts as failed
   * (retried after the backoff, dead after the last attempt), its slot goes
   * to the next action, and `context.signal` aborts. Measured in real time,
   * even under a VirtualClock. `false` for no limit. Default '5m'.
   */
  readonly timeout?: Duration | false;
  /**
   * Runs each run of the handler inside one database transaction that also
   * records the action's completion (postgres driver only): everything the
   * handler writes through `context.transaction`, and every call it makes to
   * DelayService, commits with the completion or not at all. A crash, a lost
   * reply or a lease that runs out cannot leave the handler's writes
   * committed and the action still pending, so they are made once per
   * action. On a throw or a timeout the transaction is rolled back and the
   * retry (or dead-letter) is recorded on its own. Default false.
   */
  readonly transactional?: boolean;
}
