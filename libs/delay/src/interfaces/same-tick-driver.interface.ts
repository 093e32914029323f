import { DelayDriver, ScheduleCommand, ScheduleResult } from './delay-driver.interface';

/**
 * A driver whose `schedule` and `cancel` are done before they return (the
 * wheel: nothing to wait for), with forms that say so. DelayService calls
 * these instead of awaiting the promise forms (when those are marked as
 * mere wrappers, drivers/same-tick-forms.ts): one promise and one turn of
 * the microtask queue less on the two calls users make most. Internal: not
 * part of the DelayDriver contract.
 */
export interface SameTickDriver extends DelayDriver {
  /** What `schedule` does, returned instead of promised; throws what it would reject with. */
  scheduleNow(command: ScheduleCommand): ScheduleResult;
  /** What `cancel` does, returned instead of promised. */
  cancelNow(topic: string, key: string): boolean;
}
