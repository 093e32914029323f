import { TransactionHost, Transactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { INestApplication, Injectable } from '@nestjs/common';
import { ambientFromTransactionHost, DelayService, TransactionNotActiveError } from 'nestjs-delay';
import { TestPostgresServer } from '../support/postgres-server';
import { bootClsTypeOrm } from './support/cls-typeorm-app';
import { NATIVE_TABLE, NATIVE_TABLE_DDL } from './support/orm-transactions';
import { PROBE_TABLE, PROBE_TABLE_DDL, TransactionProbeDriver } from './support/transaction-probe.driver';

jest.setTimeout(60_000);

const TOPIC = 'order.unpaid';

class PlacementFailed extends Error {}

/** The application's service: saves an order and arms its timer in one @Transactional() method, passing no transaction. */
@Injectable()
class OrderService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly delay: DelayService,
  ) {}

  /** Resolves the transaction's txid; throws after both writes when `fail`, so that the transaction rolls back. */
  @Transactional()
  async place(key: string, fail = false): Promise<string> {
    await this.txHost.tx.query(`INSERT INTO ${NATIVE_TABLE} (v) VALUES ($1)`, [key]);
    await this.delay.schedule(TOPIC, key, { delay: '30m' });
    const [{ txid }] = (await this.txHost.tx.query('SELECT txid_current()::text AS txid')) as Array<{ txid: string }>;
    if (fail) throw new PlacementFailed(txid);
    return txid;
  }

  @Transactional()
  async placeOnItsOwn(key: string): Promise<void> {
    await this.delay.schedule(TOPIC, key, { delay: '30m', transaction: null });
  }

  async placeOutsideTransaction(key: string): Promise<void> {
    await this.delay.schedule(TOPIC, key, { delay: '30m' });
  }
}

type AmbientFactory = (txHost: TransactionHost<TransactionalAdapterTypeOrm>) => () => unknown;

/**
 * The ambient transaction with @nestjs-cls/transactional (TypeORM adapter):
 * DelayModule.forRootAsync injects the TransactionHost, and a DelayService
 * call made inside a @Transactional() method, passing no transaction, writes
 * in that method's transaction.
 */
describe('the ambient transaction of @nestjs-cls/transactional', () => {
  let server: TestPostgresServer;
  let counter = 0;
  const nextKey = (): string => `cls-${++counter}`;

  beforeAll(async () => {
    server = await TestPostgresServer.start();
    await server.admin(`${PROBE_TABLE_DDL}; ${NATIVE_TABLE_DDL}`, [], true);
  });
  afterAll(async () => {
    await server?.stop();
    await server?.dispose();
  });

  async function boot(ambient: AmbientFactory): Promise<{ app: INestApplication; driver: TransactionProbeDriver }> {
    const driver = new TransactionProbeDriver();
    const app = await bootClsTypeOrm(server, (txHost) => ({ driver, transactions: { ambient: ambient(txHost) } }), [OrderService]);
    return { app, driver };
  }

  const probeRows = async (key: string): Promise<number> => Number((await server.admin(`SELECT count(*)::int AS n FROM ${PROBE_TABLE} WHERE key = $1`, [key], true))[0].n);

  describe.each([
    ['ambientFromTransactionHost(txHost)', (txHost) => ambientFromTransactionHost(txHost)],
    ['() => txHost.isTransactionActive() ? txHost.tx : undefined', (txHost) => () => (txHost.isTransactionActive() ? txHost.tx : undefined)],
  ] as Array<[string, AmbientFactory]>)('with transactions.ambient = %s', (_name, ambient) => {
    let app: INestApplication;
    let driver: TransactionProbeDriver;
    let orders: OrderService;
    let delay: DelayService;

    beforeAll(async () => {
      ({ app, driver } = await boot(ambient));
      orders = app.get(OrderService);
      delay = app.get(DelayService);
    });
    afterAll(() => app?.close());

    it('a schedule inside a @Transactional() method runs in its transaction, and is kept when it commits', async () => {
      const key = nextKey();
      const txid = await orders.place(key);
      expect(driver.writes.filter((write) => write.key === key)).toEqual([{ op: 'schedule', key, adapter: 'typeorm', txid }]);
      expect(await probeRows(key)).toBe(1);
    });

    it('and is gone when the method throws and its transaction rolls back', async () => {
      const key = nextKey();
      const failed = await orders.place(key, true).then(() => undefined, (error: unknown) => error);
      expect(failed).toBeInstanceOf(PlacementFailed);
      expect(driver.writes.filter((write) => write.key === key)).toEqual([{ op: 'schedule', key, adapter: 'typeorm', txid: (failed as Error).message }]);
      expect(await probeRows(key)).toBe(0);
      expect(await server.admin(`SELECT v FROM ${NATIVE_TABLE} WHERE v = $1`, [key], true)).toEqual([]);
    });

    it('transaction: null opts out: the write is made on its own', async () => {
      const key = nextKey();
      await orders.placeOnItsOwn(key);
      expect(driver.writes.filter((write) => write.key === key)).toEqual([]);
      expect(await delay.get(TOPIC, key)).not.toBeNull();
    });

    it('outside any transaction there is none to join: the write is made on its own', async () => {
      const key = nextKey();
      await orders.placeOutsideTransaction(key);
      expect(driver.writes.filter((write) => write.key === key)).toEqual([]);
      expect(await delay.get(TOPIC, key)).not.toBeNull();
    });
  });

  it('ambient: () => txHost.tx, without the isTransactionActive check, is caught outside a transaction: the data source manager is refused', async () => {
    const { app, driver } = await boot((txHost) => () => txHost.tx);
    try {
      const key = nextKey();
      await expect(app.get(OrderService).placeOutsideTransaction(key)).rejects.toBeInstanceOf(TransactionNotActiveError);
      expect(driver.writes).toEqual([]);
      expect(await app.get(DelayService).get(TOPIC, key)).toBeNull();
      // Inside a @Transactional() method the same function gives the transaction's manager, which is joined.
      const joined = nextKey();
      await app.get(OrderService).place(joined);
      expect(await probeRows(joined)).toBe(1);
    } finally {
      await app.close();
    }
  });
});
