import { Module } from '@nestjs/common';
import { LoyaltyController } from './loyalty.controller';
import { LoyaltyLedgerRepository } from './loyalty-ledger.repository';

@Module({
  controllers: [LoyaltyController],
  providers: [LoyaltyLedgerRepository],
  exports: [LoyaltyLedgerRepository],
})
export class LoyaltyModule {}
