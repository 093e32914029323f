import { createDelayDriver } from './delay-driver.factory';
import { resolveDelayOptions } from './delay.module-definition';
import { WheelDriver } from './drivers/wheel/wheel.driver';
import { DelayDriver } from './interfaces/delay-driver.interface';
import { SystemClock } from './time/clock';

describe('createDelayDriver', () => {
  it("uses a driver instance as it is, even one with a 'type' property of its own", async () => {
    const custom = Object.assign(new WheelDriver(), { type: 'redis' }) as DelayDriver;
    const driver = await createDelayDriver(resolveDelayOptions({ driver: custom }), new SystemClock());
    expect(driver).toBe(custom);
    await driver.close();
  });

  it('builds the wheel from its config', async () => {
    const driver = await createDelayDriver(resolveDelayOptions({ driver: { type: 'wheel', tickMs: 5 } }), new SystemClock());
    expect(driver).toBeInstanceOf(WheelDriver);
    expect((driver as WheelDriver).tickMs).toBe(5);
    await driver.close();
  });
});
