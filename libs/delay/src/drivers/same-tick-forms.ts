import { DelayDriver } from '../interfaces/delay-driver.interface';
import { SameTickDriver } from '../interfaces/same-tick-driver.interface';

/** Set on a driver's `schedule` or `cancel` that only returns what its same-tick form returns. */
const WRAPS_SAME_TICK = Symbol('nestjs-delay:wraps-same-tick');

type Marked = { [WRAPS_SAME_TICK]?: true };

/** Marks promise forms that only wrap their same-tick forms: a caller may call those instead. */
export function markSameTickWrappers(...forms: Array<(...args: never[]) => unknown>): void {
  for (const form of forms) (form as Marked)[WRAPS_SAME_TICK] = true;
}

/**
 * True when `driver.schedule` is a marked wrapper, so `scheduleNow` does
 * the same without a promise. A subclass that overrides `schedule` (to log
 * or count calls), or a test spy installed on it, replaces the marked
 * function and so keeps seeing every call. Read per call: one property of
 * a function.
 */
export function schedulesSameTick(driver: DelayDriver): driver is SameTickDriver {
  return (driver.schedule as Marked)[WRAPS_SAME_TICK] === true;
}

/** The same for `cancel` and `cancelNow`. */
export function cancelsSameTick(driver: DelayDriver): driver is SameTickDriver {
  return (driver.cancel as Marked)[WRAPS_SAME_TICK] === true;
}
