import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { AppModule } from './app.module';
import { InvalidEnvironmentError } from './config/invalid-environment.error';
import { parseShopEnv } from './config/parse-shop-env';
import { ShopConfig } from './config/shop-config.interface';
import { checkDatabase } from './database/check-database';
import { DatabaseUnreachableError } from './database/database-unreachable.error';
import { describeDatabaseUrl } from './database/describe-database-url';
import { EmbeddedPostgres } from './database/embedded-postgres';
import { EmbeddedPostgresBusyError } from './database/embedded-postgres-busy.error';
import { EmbeddedPostgresFailedError } from './database/embedded-postgres-failed.error';
import { EmbeddedPostgresUnsafePathError } from './database/embedded-postgres-unsafe-path.error';
import { configureHttp } from './http/configure-http';

/** Where the embedded PostgreSQL keeps its data when DATABASE_URL is unset. */
const DEFAULT_DATA_DIR = '.data/shop-postgres';

/** Errors whose message says all a user needs: printed without a stack trace. */
const PLAIN_ERRORS = [InvalidEnvironmentError, DatabaseUnreachableError, EmbeddedPostgresBusyError, EmbeddedPostgresFailedError, EmbeddedPostgresUnsafePathError];

/** The embedded server, while this process runs one: stopped on every way out. */
let embedded: EmbeddedPostgres | undefined;

async function bootstrap(): Promise<void> {
  // AppModule checks the environment too; checking first here means a typo
  // in a variable shows as the list of problems alone, not under a stack trace.
  const env = parseShopEnv(process.env);
  const logger = new Logger('Shop');
  const dataDir = process.env.SHOP_DATA_DIR?.trim() || DEFAULT_DATA_DIR;
  if (env.databaseUrl === undefined) {
    // No server given: one of the shop's own, its data kept across restarts. AppModule reads DATABASE_URL when it is built.
    embedded = await EmbeddedPostgres.start(resolve(dataDir));
    process.env.DATABASE_URL = embedded.url;
  }
  const databaseUrl = env.databaseUrl ?? (embedded as EmbeddedPostgres).url;
  await checkDatabase(databaseUrl);
  // abortOnError: false turns any other failed startup (Redis not reachable,
  // say) into a rejected promise, reported below, rather than an abort.
  const app = await NestFactory.create<NestExpressApplication>(AppModule, { abortOnError: false });
  configureHttp(app);
  // Ctrl-C or a TERM: the app closes (requests, timers, connections), then the embedded server stops.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      logger.log(`${signal}: shutting down`);
      void app
        .close()
        .catch((error: unknown) => logger.error(`Closing the app failed: ${error instanceof Error ? error.message : String(error)}`))
        .then(() => embedded?.stop())
        .finally(() => process.exit(0));
    });
  }
  const config = app.get<ConfigService<{ shop: ShopConfig }, true>>(ConfigService).get('shop', { infer: true });
  await app.listen(config.port);
  // Read back from the server: PORT=0 asks the OS for any free port.
  const { port } = app.getHttpServer().address() as AddressInfo;
  logger.log(`Shop listening on http://localhost:${port}`);
  logger.log(
    `Delay admin page on http://localhost:${port}/admin/delays (${config.adminToken === undefined ? 'closed: set ADMIN_TOKEN to open it' : 'it asks for ADMIN_TOKEN'}); ` +
      `JSON admin on /api/admin (${config.adminToken === undefined ? 'closed: set ADMIN_TOKEN to open it' : 'send ADMIN_TOKEN as a bearer token'}); health on /health, Prometheus metrics on /metrics`,
  );
  const allowed = config.webhookAllowedNetworks.map(({ address, prefix }) => `${address}/${prefix}`);
  if (allowed.length > 0) logger.warn(`Webhooks may reach these otherwise refused networks (WEBHOOK_ALLOWED_NETWORKS): ${allowed.join(', ')}`);
  logger.log(`Database: ${embedded ? `embedded PostgreSQL, data in ${dataDir}` : describeDatabaseUrl(databaseUrl)}`);
  logger.log(
    `Delay driver: ${DRIVER_DESCRIPTIONS[config.delayDriver]}; ` +
      `unpaid timeout ${human(config.unpaidTimeoutMs)}, auto-rate after ${human(config.autoRateAfterMs)}, ` +
      `offline after ${human(config.offlineAfterMs)}, webhook window ${human(config.webhookWindowMs)}`,
  );
}

const DRIVER_DESCRIPTIONS = {
  postgres: "postgres (the shop's database: an order and its timers commit together)",
  redis: 'redis (timers are not in the database transaction: see the README)',
  wheel: 'wheel (in memory: pending actions are lost on restart)',
} as const;

/** 1800000 → "30m": the largest unit that divides the value, as the variables are written. */
function human(ms: number): string {
  const units: Array<[string, number]> = [['h', 3_600_000], ['m', 60_000], ['s', 1_000]];
  const [unit, size] = units.find(([, unitMs]) => ms % unitMs === 0) ?? ['ms', 1];
  return `${ms / size}${unit}`;
}

// Any other way out (an uncaught error, process.exit): the embedded server is asked to stop; only kill -9 skips this, and the next start cleans up.
process.once('exit', () => embedded?.stopNow());

bootstrap().catch(async (error: unknown) => {
  const plain = PLAIN_ERRORS.some((kind) => error instanceof kind);
  const detail = plain ? (error as Error).message : error instanceof Error ? (error.stack ?? error.message) : String(error);
  console.error(`\nThe shop did not start.\n${detail}\n`);
  await embedded?.stop().catch(() => undefined);
  process.exit(1);
});
