import { Module, ValidationPipe } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { DelayModule } from 'nestjs-delay';
import { AdminModule } from './admin/admin.module';
import { CatalogueModule } from './catalogue/catalogue.module';
import { DelayErrorFilter } from './common/delay-error.filter';
import { DomainExceptionFilter } from './common/domain-exception.filter';
import { QueryFailedFilter } from './common/query-failed.filter';
import { createDelayOptions } from './config/delay-options.factory';
import { shopConfig } from './config/shop.config';
import { DatabaseModule } from './database/database.module';
import { MerchantsModule } from './merchants/merchants.module';
import { OpsModule } from './ops/ops.module';
import { OrdersModule } from './orders/orders.module';
import { PresenceModule } from './presence/presence.module';
import { ReceiverModule } from './receiver/receiver.module';

@Module({
  imports: [
    ConfigModule.forRoot({ isGlobal: true, load: [shopConfig] }),
    DatabaseModule,
    // TransactionHost: on the postgres driver, schedule and cancel join the @Transactional() method's transaction.
    DelayModule.forRootAsync({ inject: [ConfigService, TransactionHost], useFactory: createDelayOptions }),
    CatalogueModule,
    OrdersModule,
    PresenceModule,
    MerchantsModule,
    ReceiverModule,
    AdminModule,
    OpsModule,
  ],
  providers: [
    // Registered here rather than in main.ts so that tests booting AppModule get them too.
    {
      provide: APP_PIPE,
      useValue: new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true, transform: true }),
    },
    { provide: APP_FILTER, useClass: DomainExceptionFilter },
    { provide: APP_FILTER, useClass: DelayErrorFilter },
    { provide: APP_FILTER, useClass: QueryFailedFilter },
  ],
})
export class AppModule {}
