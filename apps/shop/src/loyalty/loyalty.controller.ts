import { Controller, Get, Param } from '@nestjs/common';
import { BuyerParams } from './dto/buyer-params.dto';
import { LoyaltyAccount } from './loyalty-credit';
import { LoyaltyLedgerRepository } from './loyalty-ledger.repository';

@Controller('buyers')
export class LoyaltyController {
  constructor(private readonly ledger: LoyaltyLedgerRepository) {}

  /** The buyer's points and latest credits (a buyer with none has a balance of 0). */
  @Get(':buyerId/loyalty')
  account(@Param() { buyerId }: BuyerParams): Promise<LoyaltyAccount> {
    return this.ledger.account(buyerId);
  }
}
