import { INestApplication, Type } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { NestExpressApplication } from '@nestjs/platform-express';
import { Test, TestingModuleBuilder } from '@nestjs/testing';
import { DelayClock } from 'nestjs-delay';
import { VirtualClock } from 'nestjs-delay/testing';
import { AddressInfo } from 'node:net';
import request from 'supertest';
import { AppModule } from '../../apps/shop/src/app.module';
import { SHOP_ENV_DEFAULTS } from '../../apps/shop/src/config/parse-shop-env';
import { ShopConfig } from '../../apps/shop/src/config/shop-config.interface';
import { configureHttp } from '../../apps/shop/src/http/configure-http';
import { freshShopDatabase } from './shop-database';

export type ShopEnv = Partial<
  Record<keyof typeof SHOP_ENV_DEFAULTS | 'DATABASE_URL' | 'DELAY_DRIVER' | 'REDIS_URL' | 'REDIS_PREFIX' | 'ADMIN_TOKEN' | 'WEBHOOK_ALLOWED_NETWORKS' | 'OTEL_SERVICE_NAME' | 'OTEL_RESOURCE_ATTRIBUTES', string>
>;

/** An ADMIN_TOKEN for tests that use the JSON admin (/api/admin): start the shop with `env: { ADMIN_TOKEN: TEST_ADMIN_TOKEN }`. */
export const TEST_ADMIN_TOKEN = 'test-admin-token-for-the-json-admin';

/** The header the JSON admin needs: `.set(ADMIN_API)` on a supertest request. */
export const ADMIN_API = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } as const;

/** A provider replaced by a given instance, e.g. a repository shared by two app instances. */
export interface ProviderOverride<T = unknown> {
  readonly token: Type<T>;
  readonly value: T;
}

export function override<T>(token: Type<T>, value: T): ProviderOverride<T> {
  return { token, value };
}

export interface BootedShop {
  readonly app: INestApplication;
  /** supertest bound to the app's HTTP server. */
  readonly http: ReturnType<typeof request>;
  /** Set when started with `listen: true`: the app's real base URL. */
  readonly baseUrl: string | undefined;
  /** The shop's configuration as the app parsed it at startup. */
  readonly config: ShopConfig;
  /** The DATABASE_URL the app runs on: start another app with it to share the data, as after a restart. */
  readonly databaseUrl: string;
}

export interface BootOptions {
  readonly env?: ShopEnv;
  /** Replaces the delay clock (the wheel driver then runs on it); unset: the system clock. */
  readonly clock?: VirtualClock;
  readonly listen?: boolean;
  readonly overrides?: readonly ProviderOverride[];
  /** Controllers added beside the shop's, e.g. a probe that runs a statement of the test's. */
  readonly controllers?: readonly Type[];
}

/**
 * Boots the real AppModule on a real PostgreSQL: a fresh database on the
 * test file's server (shop-database.ts) unless `env.DATABASE_URL` names
 * one. The shop's variables are pinned to their defaults (plus `env`), so
 * a developer's own UNPAID_TIMEOUT or REDIS_URL cannot change what these
 * tests see. The delay driver is the wheel unless `env` says otherwise.
 */
export async function bootShop(options: BootOptions = {}): Promise<BootedShop> {
  const databaseUrl = options.env?.DATABASE_URL ?? (await freshShopDatabase());
  const pinned = { DATABASE_URL: databaseUrl, DELAY_DRIVER: 'wheel', REDIS_URL: undefined, REDIS_PREFIX: undefined, ADMIN_TOKEN: undefined, WEBHOOK_ALLOWED_NETWORKS: undefined, OTEL_SERVICE_NAME: undefined, OTEL_RESOURCE_ATTRIBUTES: undefined };
  const moduleRef = await withEnv({ ...SHOP_ENV_DEFAULTS, ...pinned, ...options.env }, () => {
    let builder: TestingModuleBuilder = Test.createTestingModule({ imports: [AppModule], controllers: [...(options.controllers ?? [])] });
    if (options.clock) builder = builder.overrideProvider(DelayClock).useValue(options.clock);
    for (const { token, value } of options.overrides ?? []) builder = builder.overrideProvider(token).useValue(value);
    return builder.compile();
  });
  const app = moduleRef.createNestApplication<NestExpressApplication>({ logger: false });
  // As main.ts does: no X-Powered-By, the JSON body limits.
  configureHttp(app);
  let baseUrl: string | undefined;
  if (options.listen) {
    // A real port: the webhook handler reaches the receiver over HTTP, as it would another server.
    await app.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
  } else {
    await app.init();
  }
  const config = app.get<ConfigService<{ shop: ShopConfig }, true>>(ConfigService).get('shop', { infer: true });
  return { app, http: request(app.getHttpServer()), baseUrl, config, databaseUrl };
}

export interface ShopTestApp extends BootedShop {
  readonly clock: VirtualClock;
}

/**
 * Boots the shop on the wheel driver and a virtual clock: the test moves
 * time with `clock.advance('30m')` and nothing waits in real time. For the
 * behaviours that must hold on both drivers, see shop-drivers.ts.
 */
export async function startShop(options: { env?: ShopEnv; listen?: boolean; overrides?: readonly ProviderOverride[] } = {}): Promise<ShopTestApp> {
  const clock = new VirtualClock();
  return { ...(await bootShop({ ...options, clock })), clock };
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
