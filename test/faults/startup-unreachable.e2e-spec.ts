import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DelayModule, DriverUnavailableError } from 'nestjs-delay';
import { FaultDriverConfig, FAST, sleep, within, report } from './support/fault-app';
import { proxiedRedis } from './support/proxied-redis';

/**
 * Redis is unreachable when the app starts: the boot rejects with
 * DriverUnavailableError, and every client the driver opened is closed, so
 * nothing keeps trying to connect and the process can exit. The proxy in
 * front of Redis refuses every connection and counts the attempts.
 */
describe('faults: Redis unreachable at startup', () => {
  const rig = proxiedRedis('file');

  it('createApplicationContext rejects with DriverUnavailableError, and no client is left trying to connect', async () => {
    rig.proxy.refuse();
    const driver: FaultDriverConfig = { type: 'redis', url: rig.proxy.url, prefix: 'unreachable', ...FAST };

    @Module({ imports: [DelayModule.forRoot({ driver })] })
    class AppModule {}

    const started = performance.now();
    const outcome = await within(NestFactory.createApplicationContext(AppModule, { logger: false, abortOnError: false }), 15_000, 'createApplicationContext').then(
      () => 'booted',
      (error: unknown) => error,
    );
    const ms = Math.round(performance.now() - started);
    const attemptsAtFailure = rig.proxy.accepted;
    // A client left open reconnects within a couple of seconds (ioredis backs off up to 2 s).
    await sleep(2_500);
    const attemptsAfter = rig.proxy.accepted - attemptsAtFailure;
    expect({
      unavailable: outcome instanceof DriverUnavailableError,
      code: (outcome as { code?: unknown }).code,
      triedToConnect: attemptsAtFailure > 0,
      connectionAttemptsAfterTheFailure: attemptsAfter,
      open: rig.proxy.open,
    }).toEqual({ unavailable: true, code: 'ERR_DELAY_DRIVER_UNAVAILABLE', triedToConnect: true, connectionAttemptsAfterTheFailure: 0, open: 0 });
    report(`startup with Redis unreachable: rejected after ${ms} ms, ${attemptsAtFailure} connection attempt(s)`);
  }, 30_000);
});
