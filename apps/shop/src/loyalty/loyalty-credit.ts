/** Why a buyer was credited. */
export type LoyaltyReason = 'order.auto-rated';

/** One row of the loyalty ledger. */
export interface LoyaltyCredit {
  readonly buyerId: string;
  readonly orderId: string;
  readonly points: number;
  readonly reason: LoyaltyReason;
  readonly creditedAt: string;
}

/** A buyer's ledger: the balance and the latest credits, newest first. */
export interface LoyaltyAccount {
  readonly buyerId: string;
  readonly balance: number;
  readonly credits: readonly LoyaltyCredit[];
}
