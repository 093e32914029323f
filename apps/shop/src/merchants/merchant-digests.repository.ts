import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { LocalDay } from './local-day';
import { MerchantDigest } from './merchant-digest';

interface DigestRow {
  merchant_id: string;
  local_date: string;
  time_zone: string;
  day_start: Date;
  day_end: Date;
  orders_count: number;
  revenue_cents: string;
  scheduled_at: Date;
  built_at: Date;
}

/** Most digests listed at once: about three months of days. */
const LISTED = 92;

const COLUMNS = `merchant_id, local_date::text AS local_date, time_zone, day_start, day_end, orders_count, revenue_cents::text AS revenue_cents, scheduled_at, built_at`;

/**
 * Merchants' daily digests in `merchant_digests`, one per merchant and local
 * date, and the sales they are built from. Plain SQL: the dates stay the
 * text PostgreSQL writes (no conversion through the process's own zone).
 */
@Injectable()
export class MerchantDigestsRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** Orders paid within `day` with lines of the merchant, and what those lines came to. */
  async sales(merchantId: string, day: LocalDay): Promise<{ ordersCount: number; revenueCents: number }> {
    const [row] = (await this.txHost.tx.query(
      `SELECT count(DISTINCT o.id)::int AS orders_count, coalesce(sum(l.quantity * l.unit_price_cents), 0)::text AS revenue_cents
         FROM orders o JOIN order_lines l ON l.order_id = o.id
        WHERE l.merchant_id = $1 AND o.paid_at >= $2 AND o.paid_at < $3`,
      [merchantId, day.from, day.to],
    )) as Array<{ orders_count: number; revenue_cents: string }>;
    return { ordersCount: row?.orders_count ?? 0, revenueCents: Number(row?.revenue_cents ?? 0) };
  }

  /** Stores the digest unless the merchant has one for that local date already; true if this one was stored. */
  async insertIfAbsent(digest: MerchantDigest): Promise<boolean> {
    const rows: unknown[] = await this.txHost.tx.query(
      `INSERT INTO merchant_digests (merchant_id, local_date, time_zone, day_start, day_end, orders_count, revenue_cents, scheduled_at, built_at)
       VALUES ($1, $2::date, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (merchant_id, local_date) DO NOTHING
       RETURNING local_date`,
      [digest.merchantId, digest.localDate, digest.timeZone, digest.from, digest.to, digest.ordersCount, digest.revenueCents, digest.scheduledAt, digest.builtAt],
    );
    return rows.length === 1;
  }

  /** The merchant's latest digests, newest first. */
  async findByMerchantId(merchantId: string): Promise<MerchantDigest[]> {
    const rows = (await this.txHost.tx.query(`SELECT ${COLUMNS} FROM merchant_digests WHERE merchant_id = $1 ORDER BY local_date DESC LIMIT $2`, [
      merchantId,
      LISTED,
    ])) as DigestRow[];
    return rows.map((row) => ({
      merchantId: row.merchant_id,
      localDate: row.local_date,
      timeZone: row.time_zone,
      from: row.day_start.toISOString(),
      to: row.day_end.toISOString(),
      ordersCount: row.orders_count,
      revenueCents: Number(row.revenue_cents),
      scheduledAt: row.scheduled_at.toISOString(),
      builtAt: row.built_at.toISOString(),
    }));
  }
}
