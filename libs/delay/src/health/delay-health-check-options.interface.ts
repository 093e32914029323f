import { Duration } from '../time/duration';

/** Thresholds of one health check; every one is optional. */
export interface DelayHealthCheckOptions {
  /** Down when the driver has not answered within this; default '1s'. */
  readonly timeout?: Duration;
  /** Down when the round trip to the store (Redis) takes longer. Default: no limit. */
  readonly maxRoundTrip?: Duration;
  /**
   * Down when a topic's earliest due action has waited unclaimed longer
   * (a stuck or overloaded consumer). Default: no limit. Paused topics are
   * not held to it: their actions wait on purpose.
   */
  readonly maxLag?: Duration;
  /** Only these topics count; default every topic the driver reports. */
  readonly topics?: readonly string[];
  /** Down when a topic this process consumes has no live consumer; default true. */
  readonly requireConsumers?: boolean;
}
