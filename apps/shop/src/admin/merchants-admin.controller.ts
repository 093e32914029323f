import { Body, Controller, Post, UseGuards } from '@nestjs/common';
import { CreateMerchantDto } from '../merchants/dto/create-merchant.dto';
import { MerchantProfile } from '../merchants/merchant-profile';
import { MerchantsService } from '../merchants/merchants.service';
import { AdminApiGuard } from './admin-api.guard';

/**
 * Creates merchants (ADMIN_TOKEN as bearer): the merchant's row and its
 * daily digest schedule, at 09:00 in its zone, in one transaction. The
 * merchant then needs a token (POST /api/admin/merchants/:id/token).
 */
@Controller('api/admin/merchants')
@UseGuards(AdminApiGuard)
export class MerchantsAdminController {
  constructor(private readonly merchants: MerchantsService) {}

  @Post()
  create(@Body() { id, name, timeZone }: CreateMerchantDto): Promise<MerchantProfile> {
    return this.merchants.create({ id, name, timeZone });
  }
}
