import { MigrationInterface, QueryRunner } from 'typeorm';
import { CATALOGUE_SEED } from '../../catalogue/catalogue.seed';
import { MERCHANTS_SEED } from '../../merchants/merchants.seed';

/**
 * The shop's tables, with the rules the data must keep written into the
 * schema itself: stock never below zero (CHECK), every order line naming a
 * real product and merchant (foreign keys), one status out of the known
 * ones. The indexes serve the queries the repositories make. The demo
 * merchants and catalogue are seeded here, once, so a restart keeps the
 * stock as the orders left it.
 */
export class CreateShopSchema1764130000000 implements MigrationInterface {
  name = 'CreateShopSchema1764130000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE merchants (
        id   text PRIMARY KEY,
        name text NOT NULL
      )`);
    await queryRunner.query(`
      CREATE TABLE products (
        sku         text PRIMARY KEY,
        name        text NOT NULL,
        merchant_id text NOT NULL REFERENCES merchants (id),
        price_cents integer NOT NULL CONSTRAINT products_price_not_negative CHECK (price_cents >= 0),
        stock       integer NOT NULL CONSTRAINT products_stock_not_negative CHECK (stock >= 0)
      )`);
    await queryRunner.query(`CREATE INDEX products_merchant_id_idx ON products (merchant_id)`);
    await queryRunner.query(`
      CREATE TABLE orders (
        id             uuid PRIMARY KEY,
        seq            bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
        buyer_id       text NOT NULL,
        status         text NOT NULL CONSTRAINT orders_status_known CHECK (status IN ('created', 'paid', 'shipped', 'delivered', 'rated', 'cancelled')),
        total_cents    integer NOT NULL CHECK (total_cents >= 0),
        created_at     timestamptz NOT NULL,
        payment_due_at timestamptz,
        paid_at        timestamptz,
        shipped_at     timestamptz,
        delivered_at   timestamptz,
        auto_rate_at   timestamptz,
        rating_stars   smallint CHECK (rating_stars BETWEEN 1 AND 5),
        rating_by      text CHECK (rating_by IN ('buyer', 'auto')),
        rated_at       timestamptz,
        cancelled_at   timestamptz,
        cancel_reason  text CHECK (cancel_reason IN ('unpaid')),
        CONSTRAINT orders_rating_whole CHECK ((rating_stars IS NULL) = (rating_by IS NULL) AND (rating_stars IS NULL) = (rated_at IS NULL))
      )`);
    // GET /orders?buyerId= and ?status=, oldest first.
    await queryRunner.query(`CREATE INDEX orders_buyer_id_seq_idx ON orders (buyer_id, seq)`);
    await queryRunner.query(`CREATE INDEX orders_status_seq_idx ON orders (status, seq)`);
    await queryRunner.query(`
      CREATE TABLE order_lines (
        order_id         uuid NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
        line_no          integer NOT NULL,
        sku              text NOT NULL REFERENCES products (sku),
        name             text NOT NULL,
        merchant_id      text NOT NULL REFERENCES merchants (id),
        quantity         integer NOT NULL CONSTRAINT order_lines_quantity_positive CHECK (quantity > 0),
        unit_price_cents integer NOT NULL CHECK (unit_price_cents >= 0),
        PRIMARY KEY (order_id, line_no)
      )`);
    await queryRunner.query(`CREATE INDEX order_lines_sku_idx ON order_lines (sku)`);
    await queryRunner.query(`
      CREATE TABLE user_presence (
        user_id        text PRIMARY KEY,
        online         boolean NOT NULL,
        last_seen_at   timestamptz NOT NULL,
        offline_due_at timestamptz,
        offline_since  timestamptz
      )`);
    await queryRunner.query(`
      CREATE TABLE merchant_tokens (
        merchant_id text PRIMARY KEY REFERENCES merchants (id),
        digest      bytea NOT NULL CHECK (octet_length(digest) = 32),
        issued_at   timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`
      CREATE TABLE webhook_subscriptions (
        merchant_id   text PRIMARY KEY REFERENCES merchants (id),
        url           text NOT NULL,
        subscribed_at timestamptz NOT NULL
      )`);
    await queryRunner.query(`
      CREATE TABLE webhook_deliveries (
        id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        batch_id    text NOT NULL,
        merchant_id text NOT NULL REFERENCES merchants (id),
        url         text NOT NULL,
        event_count integer NOT NULL,
        attempt     integer NOT NULL,
        outcome     text NOT NULL CHECK (outcome IN ('delivered', 'failed')),
        http_status integer,
        error       text,
        at          timestamptz NOT NULL
      )`);
    await queryRunner.query(`CREATE INDEX webhook_deliveries_merchant_id_id_idx ON webhook_deliveries (merchant_id, id)`);
    // What the stand-in receiver got: it plays another company's server, so the merchant id it was called with is not checked against the shop's merchants.
    await queryRunner.query(`
      CREATE TABLE received_batches (
        id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        batch_id    text NOT NULL,
        merchant_id text NOT NULL,
        events      jsonb NOT NULL,
        received_at timestamptz NOT NULL,
        duplicate   boolean NOT NULL
      )`);
    await queryRunner.query(`CREATE INDEX received_batches_merchant_id_id_idx ON received_batches (merchant_id, id)`);
    await queryRunner.query(`CREATE INDEX received_batches_merchant_id_batch_id_idx ON received_batches (merchant_id, batch_id)`);

    for (const merchant of MERCHANTS_SEED) {
      await queryRunner.query(`INSERT INTO merchants (id, name) VALUES ($1, $2)`, [merchant.id, merchant.name]);
    }
    for (const product of CATALOGUE_SEED) {
      await queryRunner.query(`INSERT INTO products (sku, name, merchant_id, price_cents, stock) VALUES ($1, $2, $3, $4, $5)`, [
        product.sku,
        product.name,
        product.merchantId,
        product.priceCents,
        product.stock,
      ]);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of ['received_batches', 'webhook_deliveries', 'webhook_subscriptions', 'merchant_tokens', 'user_presence', 'order_lines', 'orders', 'products', 'merchants']) {
      await queryRunner.query(`DROP TABLE ${table}`);
    }
  }
}
