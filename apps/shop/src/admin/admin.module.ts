import { Module } from '@nestjs/common';
import { AdminController } from './admin.controller';
import { DelaysAdminService } from './delays-admin.service';

@Module({
  controllers: [AdminController],
  providers: [DelaysAdminService],
})
export class AdminModule {}
