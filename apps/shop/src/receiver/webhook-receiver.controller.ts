import { Body, Controller, Get, HttpCode, HttpStatus, Logger, Param, Post } from '@nestjs/common';
import { MerchantParams } from '../merchants/dto/merchant-params.dto';
import { WebhookBatchDto } from './dto/webhook-batch.dto';
import { ReceivedBatch } from './received-batch';
import { ReceivedBatchesRepository } from './received-batches.repository';

/**
 * Stands in for the merchants' own servers, so the demo needs nothing else
 * running: point a merchant's webhook at /webhook-receiver/<merchantId>
 * and read back what arrived.
 */
@Controller('webhook-receiver')
export class WebhookReceiverController {
  private readonly logger = new Logger(WebhookReceiverController.name);

  constructor(private readonly received: ReceivedBatchesRepository) {}

  @Post(':merchantId')
  @HttpCode(HttpStatus.NO_CONTENT)
  async receive(@Param() { merchantId }: MerchantParams, @Body() batch: WebhookBatchDto): Promise<void> {
    const duplicate = await this.received.hasBatch(merchantId, batch.batchId);
    await this.received.record({ ...batch, merchantId, receivedAt: new Date().toISOString(), duplicate });
    this.logger.log(`Receiver for "${merchantId}" got batch ${batch.batchId} with ${batch.events.length} event(s)${duplicate ? ' (duplicate)' : ''}`);
  }

  @Get(':merchantId')
  list(@Param() { merchantId }: MerchantParams): Promise<ReceivedBatch[]> {
    return this.received.findByMerchantId(merchantId);
  }
}
