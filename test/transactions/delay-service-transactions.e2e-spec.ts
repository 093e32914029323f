import { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DelayModule, DelayService, TransactionNotActiveError, UnknownTransactionError } from 'nestjs-delay';
import { TestPostgresServer } from '../support/postgres-server';
import { NATIVE_TABLE_DDL, ORM_TRANSACTIONS, OrmConnection } from './support/orm-transactions';
import { PROBE_TABLE, PROBE_TABLE_DDL, TransactionProbeDriver } from './support/transaction-probe.driver';

jest.setTimeout(60_000);

const TOPIC = 'order.unpaid';

async function bootDelay(driver: TransactionProbeDriver): Promise<{ app: INestApplication; delay: DelayService }> {
  const moduleRef = await Test.createTestingModule({ imports: [DelayModule.forRoot({ driver })] }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return { app, delay: app.get(DelayService) };
}

/**
 * DelayService hands the caller's transaction, whatever client it comes
 * from, to a driver that joins transactions: each of schedule,
 * scheduleMany, reschedule, collect and cancel reaches the driver bound to
 * that client's adapter, and the SQL the driver runs through it is part of
 * the caller's transaction (TransactionProbeDriver records txid_current()
 * and leaves a row that must follow the caller's commit or rollback).
 */
describe('DelayService writes inside the caller\'s transaction, per client', () => {
  let server: TestPostgresServer;
  let counter = 0;
  const nextKey = (): string => `k-${++counter}`;

  beforeAll(async () => {
    server = await TestPostgresServer.start();
    await server.admin(`${PROBE_TABLE_DDL}; ${NATIVE_TABLE_DDL}`, [], true);
  });
  afterAll(async () => {
    await server?.stop();
    await server?.dispose();
  });

  describe.each(ORM_TRANSACTIONS)('$name', (kind) => {
    let orm: OrmConnection;
    let app: INestApplication;
    let delay: DelayService;
    let driver: TransactionProbeDriver;
    const probeRows = async (keys: string[]): Promise<number> =>
      Number((await orm.query(`SELECT count(*)::int AS n FROM ${PROBE_TABLE} WHERE key = ANY($1::text[])`, [keys]))[0].n);

    beforeAll(async () => {
      orm = await kind.connect(server.url);
      driver = new TransactionProbeDriver();
      ({ app, delay } = await bootDelay(driver));
    });
    afterAll(async () => {
      await app?.close();
      await orm?.close();
    });

    it.each(['rollback', 'commit'] as const)('every write runs in the caller\'s transaction through the %s', async (end) => {
      const [a, b, batch] = [nextKey(), nextKey(), nextKey()];
      const before = driver.writes.length;
      const txid = await orm.transaction(async (tx) => {
        await delay.schedule(TOPIC, a, { delay: '10m', payload: { total: 1 }, transaction: tx });
        await delay.scheduleMany(TOPIC, [{ key: b, delay: '10m' }], { transaction: tx });
        expect(await delay.reschedule(TOPIC, a, { delay: '20m', transaction: tx })).not.toBeNull();
        await delay.collect(TOPIC, batch, { n: 1 }, { window: '10m', transaction: tx });
        expect(await delay.cancel(TOPIC, b, { transaction: tx })).toBe(true);
        return orm.native.txid(tx);
      }, end);
      const writes = driver.writes.slice(before);
      expect(writes.map((write) => [write.op, write.key])).toEqual([
        ['schedule', a],
        ['scheduleMany', b],
        ['reschedule', a],
        ['collect', batch],
        ['cancel', b],
      ]);
      expect(writes.every((write) => write.txid === txid && write.adapter === kind.adapter)).toBe(true);
      expect(await probeRows([a, b, batch])).toBe(end === 'commit' ? 5 : 0);
    });

    it('transaction: null writes on the driver\'s own, outside the transaction', async () => {
      const key = nextKey();
      const before = driver.writes.length;
      await orm.transaction(() => delay.schedule(TOPIC, key, { delay: '10m', transaction: null }), 'rollback');
      expect(driver.writes.length).toBe(before);
      expect(await delay.get(TOPIC, key)).not.toBeNull();
    });

    it('what the client hands out outside a transaction is refused before anything is written', async () => {
      const key = nextKey();
      const before = driver.writes.length;
      await expect(delay.schedule(TOPIC, key, { delay: '10m', transaction: orm.outside })).rejects.toBeInstanceOf(TransactionNotActiveError);
      await expect(delay.cancel(TOPIC, key, { transaction: orm.outside })).rejects.toBeInstanceOf(TransactionNotActiveError);
      expect(driver.writes.length).toBe(before);
      expect(await delay.get(TOPIC, key)).toBeNull();
    });
  });

  describe('an object of the wrong kind', () => {
    let app: INestApplication;
    let delay: DelayService;
    let driver: TransactionProbeDriver;

    beforeAll(async () => {
      driver = new TransactionProbeDriver();
      ({ app, delay } = await bootDelay(driver));
    });
    afterAll(() => app?.close());

    const wrongKinds: Array<[string, unknown]> = [
      ['a plain object', {}],
      ['a string', 'tx'],
      ['a number', 42],
      ['a Date', new Date()],
      ['a Map', new Map()],
      ['an object with only a query method', { query: async () => ({ rows: [] }) }],
      ['an object with query and release', { query: async () => ({ rows: [] }), release: () => undefined }],
      ['an object with execute and transaction (not Drizzle)', new (class Session { execute = async (): Promise<unknown[]> => []; transaction = async (): Promise<void> => undefined; })()],
      ['a function', () => undefined],
    ];

    it.each(wrongKinds)('%s is matched by no adapter: UnknownTransactionError, nothing written', async (_name, wrong) => {
      const key = nextKey();
      await expect(delay.schedule(TOPIC, key, { delay: '10m', transaction: wrong })).rejects.toBeInstanceOf(UnknownTransactionError);
      await expect(delay.scheduleMany(TOPIC, [{ key, delay: '10m' }], { transaction: wrong })).rejects.toBeInstanceOf(UnknownTransactionError);
      await expect(delay.collect(TOPIC, key, 1, { window: '1m', transaction: wrong })).rejects.toThrow(/No transaction adapter recognises .*known: typeorm, prisma, kysely, drizzle, knex, pg/);
      expect(driver.writes).toEqual([]);
      expect(await delay.get(TOPIC, key)).toBeNull();
    });
  });
});
