import { ActionKindConflictError, DelayModule, DelayService, DriverUnavailableError, ScheduleCommand, ScheduleResult, WheelDriver } from 'nestjs-delay';
import { useApps } from './support/apps';

/**
 * DelayService calls the wheel's schedule and cancel in their same-tick
 * forms (no promise of the driver's own). These tests pin down what that
 * must not change: errors still arrive as rejections, and a driver whose
 * promise forms were replaced (a subclass, a spy) still sees every call.
 */

/** A wheel whose promise forms count their calls, as a user's logging or metrics subclass would. */
class CountingWheel extends WheelDriver {
  schedules = 0;
  cancels = 0;

  override async schedule(command: ScheduleCommand): Promise<ScheduleResult> {
    this.schedules++;
    return super.schedule(command);
  }

  override async cancel(topic: string, key: string): Promise<boolean> {
    this.cancels++;
    return super.cancel(topic, key);
  }
}

/** Microtask turns until `promise` settles. */
async function turnsUntilSettled(promise: Promise<unknown>): Promise<number> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  let turns = 0;
  while (!settled) {
    await Promise.resolve();
    turns++;
  }
  return turns;
}

describe('DelayService on the wheel: same-tick schedule and cancel', () => {
  const apps = useApps();

  async function serviceOn(driver: WheelDriver): Promise<DelayService> {
    const app = await apps.boot({ imports: [DelayModule.forRoot({ driver })] });
    return app.get(DelayService);
  }

  it('settles schedule and cancel in fewer turns than through the same promise forms', async () => {
    const plain = await serviceOn(new WheelDriver());
    // The very same methods, bound: as deep as the originals, but not the functions DelayService may bypass.
    const rebound = new WheelDriver();
    rebound.schedule = rebound.schedule.bind(rebound);
    rebound.cancel = rebound.cancel.bind(rebound);
    const awaited = await serviceOn(rebound);
    const fast = [await turnsUntilSettled(plain.schedule('t', 'a', { delay: '1h' })), await turnsUntilSettled(plain.cancel('t', 'a'))];
    const slow = [await turnsUntilSettled(awaited.schedule('t', 'a', { delay: '1h' })), await turnsUntilSettled(awaited.cancel('t', 'a'))];
    expect(fast[0]).toBeLessThan(slow[0]);
    expect(fast[1]).toBeLessThan(slow[1]);
  });

  it('still calls a subclass that overrides schedule and cancel, once per call', async () => {
    const driver = new CountingWheel();
    const service = await serviceOn(driver);
    await service.schedule('t', 'a', { delay: '1h' });
    await service.schedule('t', 'b', { delay: '1h' });
    await service.cancel('t', 'a');
    expect([driver.schedules, driver.cancels]).toEqual([2, 1]);
    await expect(service.count('t')).resolves.toBe(1);
  });

  it('still calls a spy installed on schedule and cancel after bootstrap', async () => {
    const driver = new WheelDriver();
    const service = await serviceOn(driver);
    const schedule = jest.spyOn(driver, 'schedule');
    const cancel = jest.spyOn(driver, 'cancel');
    await service.schedule('t', 'a', { delay: '1h' });
    await expect(service.cancel('t', 'a')).resolves.toBe(true);
    expect([schedule.mock.calls.length, cancel.mock.calls.length]).toEqual([1, 1]);
    schedule.mockRestore();
    cancel.mockRestore();
    await service.schedule('t', 'b', { delay: '1h' });
    expect(schedule.mock.calls.length).toBe(0);
  });

  it('refuses by rejecting, never by throwing from the call, and changes nothing', async () => {
    const driver = new WheelDriver();
    const service = await serviceOn(driver);
    await service.collect('t', 'batch', { n: 1 }, { window: '1m' });
    let refused: Promise<unknown> | undefined;
    expect(() => {
      refused = service.schedule('t', 'batch', { delay: '1h' });
    }).not.toThrow();
    await expect(refused).rejects.toBeInstanceOf(ActionKindConflictError);
    await expect(service.get('t', 'batch')).resolves.toMatchObject({ items: [{ n: 1 }] });

    await driver.close();
    let closed: Promise<unknown> | undefined;
    expect(() => {
      closed = service.schedule('t', 'late', { delay: '1h' });
    }).not.toThrow();
    await expect(closed).rejects.toBeInstanceOf(DriverUnavailableError);
  });
});
