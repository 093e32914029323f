import { Body, Controller, Delete, Get, HttpCode, HttpStatus, Param, Put } from '@nestjs/common';
import { MerchantParams } from './dto/merchant-params.dto';
import { SubscribeWebhookDto } from './dto/subscribe-webhook.dto';
import { WebhookDelivery } from './webhook-delivery';
import { WebhookSubscription } from './webhook-subscription';
import { MerchantWithWebhook, WebhooksService } from './webhooks.service';

@Controller('merchants')
export class MerchantsController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Get()
  list(): MerchantWithWebhook[] {
    return this.webhooks.listMerchants();
  }

  @Put(':merchantId/webhook')
  subscribe(@Param() { merchantId }: MerchantParams, @Body() { url }: SubscribeWebhookDto): WebhookSubscription {
    return this.webhooks.subscribe(merchantId, url);
  }

  @Get(':merchantId/webhook')
  getSubscription(@Param() { merchantId }: MerchantParams): WebhookSubscription {
    return this.webhooks.getSubscription(merchantId);
  }

  @Delete(':merchantId/webhook')
  @HttpCode(HttpStatus.NO_CONTENT)
  unsubscribe(@Param() { merchantId }: MerchantParams): void {
    this.webhooks.unsubscribe(merchantId);
  }

  @Get(':merchantId/webhook/deliveries')
  deliveries(@Param() { merchantId }: MerchantParams): WebhookDelivery[] {
    return this.webhooks.listDeliveries(merchantId);
  }
}
