import { ResolvedDelayOptions } from './delay.module-definition';
import { WheelDriver } from './drivers/wheel/wheel.driver';
import { DelayDriver } from './interfaces/delay-driver.interface';
import { DelayClock } from './time/clock';

/** Builds the driver the options name; a driver instance given in the options is used as it is. */
export function createDelayDriver(options: ResolvedDelayOptions, clock: DelayClock): DelayDriver {
  const { driver } = options;
  if (!('type' in driver)) return driver;
  return new WheelDriver({ tickMs: driver.tickMs, clock });
}
