import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The buyers' loyalty ledger: one row per credit, appended and never
 * updated. There is deliberately no unique key on (order, reason): a credit
 * is not idempotent, and writing it twice credits twice. It is made once
 * per order by the transactional auto-rate handler (its row commits with the
 * action's completion), not by the table.
 */
export class AddLoyaltyLedger1796200000000 implements MigrationInterface {
  name = 'AddLoyaltyLedger1796200000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE loyalty_ledger (
        id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        buyer_id    text NOT NULL,
        order_id    uuid NOT NULL REFERENCES orders (id),
        points      integer NOT NULL CHECK (points > 0),
        reason      text NOT NULL CHECK (reason IN ('order.auto-rated')),
        credited_at timestamptz NOT NULL
      )`);
    await queryRunner.query(`CREATE INDEX loyalty_ledger_buyer_id_idx ON loyalty_ledger (buyer_id, id)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE loyalty_ledger`);
  }
}
