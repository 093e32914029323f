import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Merchants' time zones and daily digests. A merchant's zone defaults to
 * UTC (the merchants created before it included). A digest is one row per
 * merchant and local date: the primary key is what makes building it again
 * (a retried occurrence, a second instance) leave the first one alone. The
 * indexes serve the digest's query: the day's paid orders with lines of the
 * merchant.
 */
export class AddMerchantDigests1795650000000 implements MigrationInterface {
  name = 'AddMerchantDigests1795650000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE merchants ADD COLUMN time_zone text NOT NULL DEFAULT 'UTC'`);
    await queryRunner.query(`
      CREATE TABLE merchant_digests (
        merchant_id   text NOT NULL REFERENCES merchants (id),
        local_date    date NOT NULL,
        time_zone     text NOT NULL,
        day_start     timestamptz NOT NULL,
        day_end       timestamptz NOT NULL,
        orders_count  integer NOT NULL CHECK (orders_count >= 0),
        revenue_cents bigint NOT NULL CHECK (revenue_cents >= 0),
        scheduled_at  timestamptz NOT NULL,
        built_at      timestamptz NOT NULL,
        PRIMARY KEY (merchant_id, local_date),
        CONSTRAINT merchant_digests_day_ordered CHECK (day_start < day_end)
      )`);
    await queryRunner.query(`CREATE INDEX orders_paid_at_idx ON orders (paid_at) WHERE paid_at IS NOT NULL`);
    await queryRunner.query(`CREATE INDEX order_lines_merchant_id_order_id_idx ON order_lines (merchant_id, order_id)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX order_lines_merchant_id_order_id_idx`);
    await queryRunner.query(`DROP INDEX orders_paid_at_idx`);
    await queryRunner.query(`DROP TABLE merchant_digests`);
    await queryRunner.query(`ALTER TABLE merchants DROP COLUMN time_zone`);
  }
}
