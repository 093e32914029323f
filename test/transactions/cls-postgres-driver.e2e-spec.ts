import { Transactional, TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { INestApplication, Injectable } from '@nestjs/common';
import { DelayContext, DelayService, OnDelayExpired } from 'nestjs-delay';
import { pollUntil, sleep } from '../conformance/support/driver-fixture';
import { TestPostgresServer } from '../support/postgres-server';
import { bootClsTypeOrmApp } from './support/cls-typeorm-app';

const TOPIC = 'order.unpaid';

class PaymentDeclined extends Error {}

/** An application's service, written as ordinary Nest code: no transaction object passes through it. */
@Injectable()
class Checkout {
  readonly cancelled: string[] = [];

  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly delay: DelayService,
  ) {}

  @Transactional()
  async place(orderId: string, decline = false): Promise<void> {
    await this.txHost.tx.query('INSERT INTO orders (id, state) VALUES ($1, $2)', [orderId, 'placed']);
    await this.delay.schedule(TOPIC, orderId, { delay: 300, payload: { orderId } });
    if (decline) throw new PaymentDeclined(orderId);
  }

  @Transactional()
  async pay(orderId: string, fail = false): Promise<void> {
    await this.txHost.tx.query('UPDATE orders SET state = $2 WHERE id = $1', [orderId, 'paid']);
    await this.delay.cancel(TOPIC, orderId);
    if (fail) throw new PaymentDeclined(orderId);
  }

  @OnDelayExpired(TOPIC)
  @Transactional()
  async onUnpaid(context: DelayContext<{ orderId: string }>): Promise<void> {
    const rows = (await this.txHost.tx.query("UPDATE orders SET state = 'cancelled' WHERE id = $1 AND state = 'placed' RETURNING id", [context.payload?.orderId])) as unknown[];
    if (rows.length > 0) this.cancelled.push(context.key);
  }
}

/**
 * @Transactional() methods of @nestjs-cls/transactional (TypeORM) on the
 * real postgres driver: the order row and its timer commit together, a
 * method that throws leaves neither, and a payment's cancel rolls back
 * with the payment.
 */
describe('@Transactional() with the postgres driver', () => {
  let server: TestPostgresServer;
  let app: INestApplication;
  let checkout: Checkout;
  let delay: DelayService;

  beforeAll(async () => {
    server = await TestPostgresServer.start();
    await server.admin('CREATE TABLE orders (id text PRIMARY KEY, state text NOT NULL)', [], true);
    app = await bootClsTypeOrmApp(server, 'cls_delay', [Checkout]);
    checkout = app.get(Checkout);
    delay = app.get(DelayService);
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await server?.dispose();
  });

  const state = async (id: string): Promise<unknown> => (await server.admin('SELECT state FROM orders WHERE id = $1', [id], true))[0]?.state;

  it('commits the order and its timer together; the timer cancels the unpaid order once', async () => {
    await checkout.place('o-1');
    expect(await state('o-1')).toBe('placed');
    expect(await delay.get(TOPIC, 'o-1')).toMatchObject({ payload: { orderId: 'o-1' } });
    await pollUntil(async () => (await state('o-1')) === 'cancelled', 'the unpaid order cancelled', 5_000);
    await sleep(200);
    expect(checkout.cancelled).toEqual(['o-1']);
  });

  it('a method that throws leaves neither the order nor its timer', async () => {
    await expect(checkout.place('o-2', true)).rejects.toBeInstanceOf(PaymentDeclined);
    expect(await state('o-2')).toBeUndefined();
    expect(await delay.get(TOPIC, 'o-2')).toBeNull();
  });

  it('paying cancels the timer with the payment; a payment that rolls back leaves the timer armed', async () => {
    await checkout.place('o-3');
    await checkout.place('o-4');
    await checkout.pay('o-3');
    await expect(checkout.pay('o-4', true)).rejects.toBeInstanceOf(PaymentDeclined);
    expect(await delay.get(TOPIC, 'o-3')).toBeNull();
    expect(await delay.get(TOPIC, 'o-4')).not.toBeNull();
    await pollUntil(async () => (await state('o-4')) === 'cancelled', 'the order whose payment rolled back cancelled', 5_000);
    await sleep(300);
    expect(await state('o-3')).toBe('paid');
    expect(checkout.cancelled).not.toContain('o-3');
  });
});
