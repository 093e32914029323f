import { ConfigService } from '@nestjs/config';
import { TypeOrmModuleOptions } from '@nestjs/typeorm';
import { ShopConfig } from '../config/shop-config.interface';
import { SHOP_ENTITIES, SHOP_MIGRATIONS } from './shop-entities';

/**
 * TypeORM on the shop's PostgreSQL. The schema is the migrations' alone
 * (synchronize stays off): they run at startup, each once, in one
 * transaction. No connection retries: main.ts has checked that the server
 * answers, and a database that goes away later fails requests, not the
 * startup.
 */
export function createTypeOrmOptions(configService: ConfigService<{ shop: ShopConfig }, true>): TypeOrmModuleOptions {
  const { databaseUrl } = configService.get('shop', { infer: true });
  if (databaseUrl === undefined) {
    throw new Error('DATABASE_URL is not set: set it to your PostgreSQL server, or start the shop with `npm start`, which runs an embedded one');
  }
  return {
    type: 'postgres',
    url: databaseUrl,
    applicationName: 'nestjs-delay-shop',
    entities: SHOP_ENTITIES,
    migrations: SHOP_MIGRATIONS,
    migrationsRun: true,
    migrationsTransactionMode: 'all',
    synchronize: false,
    retryAttempts: 1,
    extra: { max: 10, connectionTimeoutMillis: 5_000 },
  };
}
