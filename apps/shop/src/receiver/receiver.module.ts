import { Module } from '@nestjs/common';
import { ReceivedBatchesRepository } from './received-batches.repository';
import { WebhookReceiverController } from './webhook-receiver.controller';

@Module({
  controllers: [WebhookReceiverController],
  providers: [ReceivedBatchesRepository],
})
export class ReceiverModule {}
