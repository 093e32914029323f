import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { AddressInfo } from 'node:net';
import { AppModule } from './app.module';
import { InvalidEnvironmentError } from './config/invalid-environment.error';
import { parseShopEnv } from './config/parse-shop-env';
import { ShopConfig } from './config/shop-config.interface';
import { configureHttp } from './http/configure-http';

async function bootstrap(): Promise<void> {
  // AppModule checks the environment too; checking first here means a typo
  // in a variable shows as the list of problems alone, not under a stack trace.
  parseShopEnv(process.env);
  // abortOnError: false turns any other failed startup (Redis not reachable,
  // say) into a rejected promise, reported below, rather than an abort.
  const app = await NestFactory.create<NestExpressApplication>(AppModule, { abortOnError: false });
  configureHttp(app);
  app.enableShutdownHooks();
  const config = app.get<ConfigService<{ shop: ShopConfig }, true>>(ConfigService).get('shop', { infer: true });
  await app.listen(config.port);
  // Read back from the server: PORT=0 asks the OS for any free port.
  const { port } = app.getHttpServer().address() as AddressInfo;
  const logger = new Logger('Shop');
  logger.log(`Shop listening on http://localhost:${port}`);
  logger.log(
    `Delay admin page on http://localhost:${port}/admin/delays (${config.adminToken === undefined ? 'read-only: set ADMIN_TOKEN to enable its buttons' : 'buttons ask for ADMIN_TOKEN'}); ` +
      `JSON admin on /api/admin (${config.adminToken === undefined ? 'closed: set ADMIN_TOKEN to open it' : 'send ADMIN_TOKEN as a bearer token'}); health on /health, Prometheus metrics on /metrics`,
  );
  const allowed = config.webhookAllowedNetworks.map(({ address, prefix }) => `${address}/${prefix}`);
  if (allowed.length > 0) logger.warn(`Webhooks may reach these otherwise refused networks (WEBHOOK_ALLOWED_NETWORKS): ${allowed.join(', ')}`);
  logger.log(
    `Delay driver: ${config.redisUrl === undefined ? 'wheel (in memory: pending actions are lost on restart)' : 'redis'}; ` +
      `unpaid timeout ${human(config.unpaidTimeoutMs)}, auto-rate after ${human(config.autoRateAfterMs)}, ` +
      `offline after ${human(config.offlineAfterMs)}, webhook window ${human(config.webhookWindowMs)}`,
  );
}

/** 1800000 → "30m": the largest unit that divides the value, as the variables are written. */
function human(ms: number): string {
  const units: Array<[string, number]> = [['h', 3_600_000], ['m', 60_000], ['s', 1_000]];
  const [unit, size] = units.find(([, unitMs]) => ms % unitMs === 0) ?? ['ms', 1];
  return `${ms / size}${unit}`;
}

bootstrap().catch((error: unknown) => {
  const detail = error instanceof InvalidEnvironmentError ? error.message : error instanceof Error ? (error.stack ?? error.message) : String(error);
  console.error(`\nThe shop did not start.\n${detail}\n`);
  process.exitCode = 1;
});
