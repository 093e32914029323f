import { Controller, Param, Post, UseGuards } from '@nestjs/common';
import { MerchantParams } from '../merchants/dto/merchant-params.dto';
import { IssuedMerchantToken } from '../merchants/issued-merchant-token';
import { WebhooksService } from '../merchants/webhooks.service';
import { AdminApiGuard } from './admin-api.guard';

/**
 * Issues merchants their tokens: an admin (ADMIN_TOKEN as bearer) gets a
 * merchant's new token here and hands it to the merchant, who then sends it
 * to manage its webhook subscription. Issuing again replaces the old token.
 */
@Controller('api/admin/merchants')
@UseGuards(AdminApiGuard)
export class MerchantTokensController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Post(':merchantId/token')
  issue(@Param() { merchantId }: MerchantParams): Promise<IssuedMerchantToken> {
    return this.webhooks.issueToken(merchantId);
  }
}
