/** How one topic is doing, as `DelayService.health()` reports it. */
export interface TopicHealth {
  readonly topic: string;
  /** A handler for the topic runs in this process (and `consume` is not false). */
  readonly consuming: boolean;
  /** This process's consumer of the topic is running (false when not consuming, or stopped). */
  readonly consumerAlive: boolean;
  /** How long the earliest due action has been waiting unclaimed, ms; 0 when nothing is due. */
  readonly lagMs: number;
  readonly paused: boolean;
}

/** A snapshot of the driver, for health checks and metrics. */
export interface DelayHealth {
  /** 'wheel', 'redis', or a custom driver's name. */
  readonly driver: string;
  /** The store answered. */
  readonly up: boolean;
  /** Round trip to the store, ms; 0 for the in-memory wheel. */
  readonly roundTripMs: number;
  /** The topics consumed here, and (wheel) every other topic with actions. */
  readonly topics: TopicHealth[];
  /** Settings of the store that put actions at risk (e.g. a Redis maxmemory-policy that evicts keys); absent when there is none. */
  readonly warnings?: readonly string[];
}

/** What a driver reports; DelayService adds the driver's name. */
export type DriverHealth = Omit<DelayHealth, 'driver'>;
