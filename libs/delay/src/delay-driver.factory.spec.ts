import { createDelayDriver, loadOptionalPeer } from './delay-driver.factory';
import { resolveDelayOptions } from './delay.module-definition';
import { WheelDriver } from './drivers/wheel/wheel.driver';
import { DelayError } from './errors/delay.error';
import { MissingPeerDependencyError } from './errors/missing-peer-dependency.error';
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

describe('loadOptionalPeer', () => {
  // A package name nothing installs, so the resolver's own not-found error is what the loader sees.
  const absent: string = 'nestjs-delay-absent-peer';

  it('turns the resolver failing to find the peer into a MissingPeerDependencyError naming it', async () => {
    const failure = await loadOptionalPeer(absent, 'The Redis driver', 'ioredis 5 or 6', () => import(absent) as Promise<unknown>).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(MissingPeerDependencyError);
    expect(failure).toBeInstanceOf(DelayError);
    const missing = failure as MissingPeerDependencyError;
    expect(missing.code).toBe('ERR_DELAY_MISSING_PEER_DEPENDENCY');
    expect(missing.packageName).toBe(absent);
    expect(missing.message).toBe(`The Redis driver needs the package '${absent}' (ioredis 5 or 6), which is not installed: run npm install ${absent}`);
    expect((missing.cause as NodeJS.ErrnoException).code).toBe('MODULE_NOT_FOUND');
  });

  it('rethrows a missing module other than the peer untouched: that is a broken install, not a missing peer', async () => {
    const failure = await loadOptionalPeer('ioredis', 'The Redis driver', 'ioredis 5 or 6', () => import(absent) as Promise<unknown>).catch((error: unknown) => error);
    expect(failure).not.toBeInstanceOf(DelayError);
    expect((failure as NodeJS.ErrnoException).code).toBe('MODULE_NOT_FOUND');
  });

  it('rethrows any other failure untouched and passes a successful load through', async () => {
    const boom = new Error("Cannot find module 'ioredis' in this message, but no module-not-found code");
    await expect(loadOptionalPeer('ioredis', 'The Redis driver', 'ioredis 5 or 6', () => Promise.reject(boom))).rejects.toBe(boom);
    await expect(loadOptionalPeer('ioredis', 'The Redis driver', 'ioredis 5 or 6', () => Promise.resolve(42))).resolves.toBe(42);
  });
});
