import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Module } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsModule } from 'nestjs-cls';
import { createTypeOrmOptions } from './typeorm-options.factory';

/**
 * The shop's PostgreSQL through TypeORM, and `@Transactional()`: a method so
 * marked runs in one transaction, which every repository call inside it
 * (and, on the postgres delay driver, every schedule and cancel) joins
 * through the TransactionHost of @nestjs-cls/transactional.
 */
@Module({
  imports: [
    TypeOrmModule.forRootAsync({ inject: [ConfigService], useFactory: createTypeOrmOptions }),
    ClsModule.forRoot({
      global: true,
      plugins: [
        new ClsPluginTransactional({
          imports: [TypeOrmModule],
          adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }),
        }),
      ],
    }),
  ],
})
export class DatabaseModule {}
