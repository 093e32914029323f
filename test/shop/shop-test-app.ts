import { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DelayClock } from 'nestjs-delay';
import { VirtualClock } from 'nestjs-delay/testing';
import { AddressInfo } from 'node:net';
import request from 'supertest';
import { AppModule } from '../../apps/shop/src/app.module';
import { SHOP_ENV_DEFAULTS } from '../../apps/shop/src/config/parse-shop-env';

type ShopEnv = Partial<Record<keyof typeof SHOP_ENV_DEFAULTS | 'REDIS_URL', string>>;

export interface ShopTestApp {
  readonly app: INestApplication;
  readonly clock: VirtualClock;
  /** supertest bound to the app's HTTP server. */
  readonly http: ReturnType<typeof request>;
  /** Set when started with `listen: true`: the app's real base URL. */
  readonly baseUrl: string | undefined;
}

/**
 * Boots the real AppModule on a virtual clock: the test moves time with
 * `clock.advance('30m')` and nothing waits in real time. The shop's
 * variables are pinned to their defaults (plus `env`), so a developer's own
 * UNPAID_TIMEOUT or REDIS_URL cannot change what these tests see.
 */
export async function startShop(options: { env?: ShopEnv; listen?: boolean } = {}): Promise<ShopTestApp> {
  const clock = new VirtualClock();
  const moduleRef = await withEnv({ ...SHOP_ENV_DEFAULTS, REDIS_URL: undefined, ...options.env }, () =>
    Test.createTestingModule({ imports: [AppModule] })
      .overrideProvider(DelayClock)
      .useValue(clock)
      .compile(),
  );
  const app = moduleRef.createNestApplication({ logger: false });
  let baseUrl: string | undefined;
  if (options.listen) {
    // A real port: the webhook handler reaches the receiver over HTTP, as it would another server.
    await app.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
  } else {
    await app.init();
  }
  return { app, clock, http: request(app.getHttpServer()), baseUrl };
}

/** Runs `fn` with the shop's variables set as given (undefined: unset), then puts the previous values back. */
export async function withEnv<T>(env: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(env).map((name) => [name, process.env[name]]));
  assignEnv(env);
  try {
    return await fn();
  } finally {
    assignEnv(saved);
  }
}

function assignEnv(env: Record<string, string | undefined>): void {
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
}
