import { Module } from '@nestjs/common';
import { MerchantsModule } from '../merchants/merchants.module';
import { AdminApiGuard } from './admin-api.guard';
import { AdminController } from './admin.controller';
import { DelaysAdminService } from './delays-admin.service';
import { MerchantTokensController } from './merchant-tokens.controller';

/** The JSON admin at /api/admin: delayed actions and merchants' tokens, all behind the ADMIN_TOKEN. */
@Module({
  imports: [MerchantsModule],
  controllers: [AdminController, MerchantTokensController],
  providers: [DelaysAdminService, AdminApiGuard],
})
export class AdminModule {}
