// A Nest application whose services write through TypeORM inside
// @Transactional() methods of @nestjs-cls/transactional, with DelayModule on
// the postgres driver joining that ambient transaction: what an application
// using both does, shared by the specs that exercise it.
import { ClsPluginTransactional, TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { INestApplication, Provider } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsModule } from 'nestjs-cls';
import { ambientFromTransactionHost, DelayModule, DelayModuleOptions } from 'nestjs-delay';
import { TestPostgresServer } from '../../support/postgres-server';

/** Boots the application on `server`, the driver's tables in `schema`; logs off. */
export function bootClsTypeOrmApp(server: TestPostgresServer, schema: string, providers: Provider[]): Promise<INestApplication> {
  return bootClsTypeOrm(
    server,
    (txHost) => ({
      driver: { type: 'postgres', connectionString: server.url, schema },
      transactions: { ambient: ambientFromTransactionHost(txHost) },
      shutdownTimeout: '1s',
    }),
    providers,
  );
}

/** The same application with DelayModule options of the caller's (its driver, its way to the ambient transaction). */
export async function bootClsTypeOrm(
  server: TestPostgresServer,
  delayOptions: (txHost: TransactionHost<TransactionalAdapterTypeOrm>) => DelayModuleOptions,
  providers: Provider[],
): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      TypeOrmModule.forRoot({ type: 'postgres', url: server.url, poolSize: 4 }),
      ClsModule.forRoot({
        global: true,
        plugins: [new ClsPluginTransactional({ imports: [TypeOrmModule], adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }) })],
      }),
      DelayModule.forRootAsync({ inject: [TransactionHost], useFactory: delayOptions }),
    ],
    providers,
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return app;
}
