import { Body, Controller, Delete, Get, HttpCode, HttpStatus, Param, Put, UseGuards } from '@nestjs/common';
import { MerchantParams } from './dto/merchant-params.dto';
import { SubscribeWebhookDto } from './dto/subscribe-webhook.dto';
import { WebhookDelivery } from './webhook-delivery';
import { WebhookSubscription } from './webhook-subscription';
import { MerchantTokenGuard } from './merchant-token.guard';
import { MerchantListing, WebhooksService } from './webhooks.service';

/**
 * Merchants and their webhook subscriptions. Anyone may list the merchants;
 * reading or changing a merchant's subscription and its delivery log needs
 * that merchant's token (MerchantTokenGuard).
 */
@Controller('merchants')
export class MerchantsController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Get()
  list(): Promise<MerchantListing[]> {
    return this.webhooks.listMerchants();
  }

  @Put(':merchantId/webhook')
  @UseGuards(MerchantTokenGuard)
  subscribe(@Param() { merchantId }: MerchantParams, @Body() { url }: SubscribeWebhookDto): Promise<WebhookSubscription> {
    return this.webhooks.subscribe(merchantId, url);
  }

  @Get(':merchantId/webhook')
  @UseGuards(MerchantTokenGuard)
  getSubscription(@Param() { merchantId }: MerchantParams): Promise<WebhookSubscription> {
    return this.webhooks.getSubscription(merchantId);
  }

  @Delete(':merchantId/webhook')
  @UseGuards(MerchantTokenGuard)
  @HttpCode(HttpStatus.NO_CONTENT)
  unsubscribe(@Param() { merchantId }: MerchantParams): Promise<void> {
    return this.webhooks.unsubscribe(merchantId);
  }

  @Get(':merchantId/webhook/deliveries')
  @UseGuards(MerchantTokenGuard)
  deliveries(@Param() { merchantId }: MerchantParams): Promise<WebhookDelivery[]> {
    return this.webhooks.listDeliveries(merchantId);
  }
}
