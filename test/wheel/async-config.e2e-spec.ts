import { Injectable, Module, Type } from '@nestjs/common';
import { DelayContext, DelayModule, DelayService, InvalidDelayOptionsError, OnDelayExpired, PayloadTooLargeError, VirtualClock } from 'nestjs-delay';
import { useApps } from './support/apps';

/** Stands in for @nestjs/config's ConfigService: typed settings read by key. */
@Injectable()
class AppConfig {
  constructor(private readonly values: Record<string, unknown>) {}

  get<T>(name: string): T {
    return this.values[name] as T;
  }
}

function configModule(values: Record<string, unknown>): Type<unknown> {
  @Module({ providers: [{ provide: AppConfig, useValue: new AppConfig(values) }], exports: [AppConfig] })
  class AppConfigModule {}
  return AppConfigModule;
}

@Injectable()
class Failing {
  readonly attempts: number[] = [];

  @OnDelayExpired('cfg.topic')
  run({ attempt }: DelayContext): void {
    this.attempts.push(attempt);
    throw new Error('fails');
  }
}

describe('DelayModule.forRootAsync (wheel driver)', () => {
  const apps = useApps();

  it('builds its options with useFactory from an injected config provider', async () => {
    const clock = new VirtualClock();
    const config = configModule({ clock, tickMs: 1, attempts: 2, backoff: '10s', maxPayloadBytes: 64 });
    const app = await apps.boot({
      imports: [
        DelayModule.forRootAsync({
          imports: [config],
          inject: [AppConfig],
          useFactory: (cfg: AppConfig) => ({
            clock: cfg.get<VirtualClock>('clock'),
            driver: { type: 'wheel', tickMs: cfg.get<number>('tickMs') },
            defaults: { attempts: cfg.get<number>('attempts'), backoff: cfg.get<string>('backoff') },
            maxPayloadBytes: cfg.get<number>('maxPayloadBytes'),
          }),
        }),
      ],
      providers: [Failing],
    });
    const delay = app.get(DelayService);
    const start = clock.now();

    // maxPayloadBytes from the config applies.
    await expect(delay.schedule('cfg.topic', 'big', { delay: '1s', payload: 'x'.repeat(100) })).rejects.toBeInstanceOf(PayloadTooLargeError);

    // The configured clock drives the timers; attempts and backoff come from the config.
    const action = await delay.schedule('cfg.topic', 'k', { delay: '1s' });
    expect(action.dueAt).toEqual(new Date(start + 1_000));
    await clock.advance('1m');
    expect(app.get(Failing).attempts).toEqual([1, 2]);
    const dead = await delay.listDead('cfg.topic');
    expect(dead.items).toEqual([expect.objectContaining({ key: 'k', attempts: 2, diedAt: new Date(start + 11_000) })]);
  });

  it('supports an async factory', async () => {
    const clock = new VirtualClock();
    const app = await apps.boot({
      imports: [
        DelayModule.forRootAsync({
          useFactory: async () => {
            await new Promise((resolve) => setImmediate(resolve));
            return { clock };
          },
        }),
      ],
    });
    const action = await app.get(DelayService).schedule('any.topic', 'k', { delay: '5m' });
    expect(action.dueAt).toEqual(new Date(clock.now() + 300_000));
  });

  it('fails bootstrap with InvalidDelayOptionsError when the factory returns bad options', async () => {
    const config = configModule({ tickMs: 0 });
    const compiled = apps.create({
      imports: [
        DelayModule.forRootAsync({
          imports: [config],
          inject: [AppConfig],
          useFactory: (cfg: AppConfig) => ({ driver: { type: 'wheel', tickMs: cfg.get<number>('tickMs') } }),
        }),
      ],
    });
    await expect(compiled).rejects.toBeInstanceOf(InvalidDelayOptionsError);
    await expect(compiled).rejects.toMatchObject({ code: 'ERR_DELAY_INVALID_OPTIONS', problems: [expect.stringContaining('driver.tickMs')] });
  });
});
