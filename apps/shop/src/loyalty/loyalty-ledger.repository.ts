import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { LoyaltyAccount, LoyaltyCredit, LoyaltyReason } from './loyalty-credit';

interface CreditRow {
  buyer_id: string;
  order_id: string;
  points: number;
  reason: LoyaltyReason;
  credited_at: Date;
}

/** Most credits listed at once. */
const LISTED = 100;

/**
 * The loyalty ledger in `loyalty_ledger`: appended one row per credit, no
 * unique key, so `credit` is not idempotent. Inside a `@Transactional()`
 * method, or a transactional handler's run, it writes in that transaction.
 */
@Injectable()
export class LoyaltyLedgerRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  async credit(credit: LoyaltyCredit): Promise<void> {
    await this.txHost.tx.query(`INSERT INTO loyalty_ledger (buyer_id, order_id, points, reason, credited_at) VALUES ($1, $2, $3, $4, $5)`, [
      credit.buyerId,
      credit.orderId,
      credit.points,
      credit.reason,
      credit.creditedAt,
    ]);
  }

  async account(buyerId: string): Promise<LoyaltyAccount> {
    const [total] = (await this.txHost.tx.query(`SELECT coalesce(sum(points), 0)::int AS balance FROM loyalty_ledger WHERE buyer_id = $1`, [buyerId])) as Array<{ balance: number }>;
    const rows = (await this.txHost.tx.query(
      `SELECT buyer_id, order_id::text AS order_id, points, reason, credited_at FROM loyalty_ledger WHERE buyer_id = $1 ORDER BY id DESC LIMIT $2`,
      [buyerId, LISTED],
    )) as CreditRow[];
    return {
      buyerId,
      balance: total?.balance ?? 0,
      credits: rows.map((row) => ({ buyerId: row.buyer_id, orderId: row.order_id, points: row.points, reason: row.reason, creditedAt: row.credited_at.toISOString() })),
    };
  }
}
