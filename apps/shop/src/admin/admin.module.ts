import { Module } from '@nestjs/common';
import { MerchantsModule } from '../merchants/merchants.module';
import { AdminApiGuard } from './admin-api.guard';
import { AdminController } from './admin.controller';
import { DelaysAdminService } from './delays-admin.service';
import { MerchantTokensController } from './merchant-tokens.controller';
import { MerchantsAdminController } from './merchants-admin.controller';

/** The JSON admin at /api/admin: delayed actions, merchants and their tokens, all behind the ADMIN_TOKEN. */
@Module({
  imports: [MerchantsModule],
  controllers: [AdminController, MerchantTokensController, MerchantsAdminController],
  providers: [DelaysAdminService, AdminApiGuard],
})
export class AdminModule {}
