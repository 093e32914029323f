import { Body, Controller, HttpCode, HttpStatus, Param, Post, UseGuards } from '@nestjs/common';
import { MerchantParams } from '../merchants/dto/merchant-params.dto';
import { CreateMerchantDto } from '../merchants/dto/create-merchant.dto';
import { MerchantProfile } from '../merchants/merchant-profile';
import { MerchantsService } from '../merchants/merchants.service';
import { AdminApiGuard } from './admin-api.guard';

/**
 * Creates merchants (ADMIN_TOKEN as bearer): the merchant's row and its
 * daily digest schedule, at 09:00 in its zone, in one transaction. The
 * merchant then needs a token (POST /api/admin/merchants/:id/token). An
 * admin may also have a merchant's digest of yesterday built now.
 */
@Controller('api/admin/merchants')
@UseGuards(AdminApiGuard)
export class MerchantsAdminController {
  constructor(private readonly merchants: MerchantsService) {}

  @Post()
  create(@Body() { id, name, timeZone }: CreateMerchantDto): Promise<MerchantProfile> {
    return this.merchants.create({ id, name, timeZone });
  }

  /** `started: false` when the delay driver runs no recurring schedules, or the merchant has none. */
  @Post(':merchantId/digest')
  @HttpCode(HttpStatus.OK)
  runDigest(@Param() { merchantId }: MerchantParams): Promise<{ merchantId: string; started: boolean }> {
    return this.merchants.runDigestNow(merchantId);
  }
}
