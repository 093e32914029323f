/** One topic as `DelayService.topics()` reports it. */
export interface TopicSummary {
  readonly topic: string;
  /** Pending actions not running now (due or not). */
  readonly waiting: number;
  /** Actions whose handler is running now (on any instance, on Redis). */
  readonly running: number;
  /** Actions that used up their attempts. */
  readonly dead: number;
  /** True while the topic is paused: nothing new starts. */
  readonly paused: boolean;
}
