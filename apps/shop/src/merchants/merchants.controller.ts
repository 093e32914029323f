import { Body, Controller, Delete, Get, HttpCode, HttpStatus, Param, Put, UseGuards } from '@nestjs/common';
import { MerchantParams } from './dto/merchant-params.dto';
import { MerchantTimeZoneDto } from './dto/merchant-time-zone.dto';
import { MerchantDigest } from './merchant-digest';
import { MerchantDigestsService } from './merchant-digests.service';
import { MerchantProfile } from './merchant-profile';
import { MerchantsService } from './merchants.service';
import { SubscribeWebhookDto } from './dto/subscribe-webhook.dto';
import { WebhookDelivery } from './webhook-delivery';
import { WebhookSubscription } from './webhook-subscription';
import { MerchantTokenGuard } from './merchant-token.guard';
import { MerchantListing, WebhooksService } from './webhooks.service';

/**
 * Merchants, their webhook subscriptions, zones and daily digests. Anyone
 * may list the merchants; reading or changing a merchant's subscription,
 * its delivery log, its zone or its digests needs that merchant's token
 * (MerchantTokenGuard).
 */
@Controller('merchants')
export class MerchantsController {
  constructor(
    private readonly webhooks: WebhooksService,
    private readonly merchants: MerchantsService,
    private readonly digests: MerchantDigestsService,
  ) {}

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

  @Get(':merchantId/time-zone')
  @UseGuards(MerchantTokenGuard)
  getTimeZone(@Param() { merchantId }: MerchantParams): Promise<MerchantProfile> {
    return this.merchants.get(merchantId);
  }

  /** Moves the merchant's days, and its 09:00 digest, to another zone. */
  @Put(':merchantId/time-zone')
  @UseGuards(MerchantTokenGuard)
  changeTimeZone(@Param() { merchantId }: MerchantParams, @Body() { timeZone }: MerchantTimeZoneDto): Promise<MerchantProfile> {
    return this.merchants.changeTimeZone(merchantId, timeZone);
  }

  /** The merchant's daily digests, newest first. */
  @Get(':merchantId/digests')
  @UseGuards(MerchantTokenGuard)
  listDigests(@Param() { merchantId }: MerchantParams): Promise<MerchantDigest[]> {
    return this.digests.list(merchantId);
  }
}
