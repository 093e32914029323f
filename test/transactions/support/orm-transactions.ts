import { sql as drizzleSql } from 'drizzle-orm';
import { drizzle, NodePgDatabase } from 'drizzle-orm/node-postgres';
import knexFactory, { Knex } from 'knex';
import { Kysely, PostgresDialect, sql as kyselySql, Transaction as KyselyTransaction } from 'kysely';
import { Pool, PoolClient } from 'pg';
import { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { prismaClient } from './prisma-client';

/**
 * The ways an application holds a PostgreSQL transaction, one per client or
 * ORM the built-in adapters know, each opening real transactions of its own
 * on a real server. Reusable by any test that must run the same scenario on
 * every client:
 *
 *   for (const kind of ORM_TRANSACTIONS) {
 *     const orm = await kind.connect(server.url);
 *     await orm.transaction((tx) => delay.schedule(..., { transaction: tx }), 'rollback');
 *     await orm.close();
 *   }
 */
export interface OrmTransactionKind {
  /** e.g. 'typeorm EntityManager'. */
  readonly name: string;
  /** The name of the built-in adapter that runs SQL on its transaction object. */
  readonly adapter: string;
  /**
   * True when a transaction object kept past its commit is refused by the
   * adapter's check or by the client. A pg client after COMMIT (or
   * released), and Drizzle's tx on it, give no sign: a statement through
   * them runs on its own (the postgres driver's guard refuses its writes).
   */
  readonly refusedAfterEnd: boolean;
  connect(url: string): Promise<OrmConnection>;
}

export interface OrmConnection {
  /**
   * Opens a transaction the way this client does, runs `work` with its
   * transaction object, then commits it, or rolls it back when `end` is
   * 'rollback'; resolves what `work` resolved. When `work` throws, the
   * transaction is rolled back and the error rethrown.
   */
  transaction<T>(work: (tx: unknown) => Promise<T>, end?: 'commit' | 'rollback'): Promise<T>;
  /**
   * `DelayModuleOptions.transactions.run` as an application writes it for
   * this client (`(work) => dataSource.transaction(work)`, ...): opens a
   * transaction, runs `work` with its transaction object, commits if it
   * resolves and rolls back if it rejects.
   */
  run<T>(work: (tx: unknown) => Promise<T>): Promise<T>;
  /** One statement outside any transaction (autocommit), for set-up and checks. */
  query(sql: string, params?: unknown[]): Promise<Array<Record<string, unknown>>>;
  /** What this client hands out outside a transaction (a pool, the db, the data source's manager): not a transaction. */
  readonly outside: unknown;
  /** The client's own API (not an adapter) on a transaction object of its: to compare with what an adapter does. */
  readonly native: NativeOperations;
  close(): Promise<void>;
}

export interface NativeOperations {
  /** Inserts `value` into NATIVE_TABLE. */
  insert(tx: unknown, value: string): Promise<void>;
  /** txid_current() in the transaction. */
  txid(tx: unknown): Promise<string>;
}

/** The table `native.insert` writes to. */
export const NATIVE_TABLE = 'orm_native_rows';
export const NATIVE_TABLE_DDL = `CREATE TABLE IF NOT EXISTS ${NATIVE_TABLE} (v text NOT NULL)`;
const INSERT_NATIVE = `INSERT INTO ${NATIVE_TABLE} (v) VALUES ($1)`;
const TXID = 'SELECT txid_current()::text AS txid';

const txidOf = (rows: unknown): string => String((rows as Array<{ txid: unknown }>)[0].txid);

/** Thrown inside a callback-style transaction to make its client roll back; carries the callback's value out. */
class RollbackRequested {
  constructor(readonly value: unknown) {}
}

/** Runs `work` in a callback-style transaction (the client commits when the callback resolves), rolling back on request. */
async function viaCallback<T>(open: (callback: (tx: unknown) => Promise<T>) => Promise<T>, work: (tx: unknown) => Promise<T>, end: 'commit' | 'rollback'): Promise<T> {
  try {
    return await open(async (tx) => {
      const value = await work(tx);
      if (end === 'rollback') throw new RollbackRequested(value);
      return value;
    });
  } catch (error) {
    if (error instanceof RollbackRequested) return error.value as T;
    throw error;
  }
}

/** The parts of Prisma's transaction client the native operations use. */
interface PrismaTx {
  $executeRaw(query: TemplateStringsArray, ...values: unknown[]): Promise<number>;
  $queryRaw(query: TemplateStringsArray, ...values: unknown[]): Promise<unknown>;
}

type DrizzleTx = Parameters<Parameters<NodePgDatabase['transaction']>[0]>[0];

/** A small pool; an idle connection the server drops (at the end of a test file) is not an unhandled error. */
function pgPool(url: string): Pool {
  const pool = new Pool({ connectionString: url, max: 4 });
  pool.on('error', () => undefined);
  return pool;
}

/** BEGIN on a client of `pool`, `work` with that client, then COMMIT (or ROLLBACK on request, or when `work` throws). */
async function inPgTransaction<T>(pool: Pool, work: (tx: unknown) => Promise<T>, end: 'commit' | 'rollback'): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    let value;
    try {
      value = await work(client);
    } catch (error) {
      await client.query('ROLLBACK');
      throw error;
    }
    await client.query(end === 'commit' ? 'COMMIT' : 'ROLLBACK');
    return value;
  } finally {
    client.release();
  }
}

export const PG_CLIENT: OrmTransactionKind = {
  name: 'pg PoolClient',
  refusedAfterEnd: false,
  adapter: 'pg',
  async connect(url) {
    const pool = pgPool(url);
    return {
      outside: pool,
      native: {
        insert: async (tx, value) => void (await (tx as PoolClient).query(INSERT_NATIVE, [value])),
        txid: async (tx) => txidOf((await (tx as PoolClient).query(TXID)).rows),
      },
      transaction: (work, end = 'commit') => inPgTransaction(pool, work, end),
      run: (work) => inPgTransaction(pool, work, 'commit'),
      query: async (sql, params = []) => (await pool.query(sql, params)).rows,
      close: () => pool.end(),
    };
  },
};

async function typeOrmDataSource(url: string): Promise<DataSource> {
  const dataSource = new DataSource({ type: 'postgres', url, poolSize: 4 });
  await dataSource.initialize();
  return dataSource;
}

export const TYPEORM_ENTITY_MANAGER: OrmTransactionKind = {
  name: 'typeorm EntityManager',
  refusedAfterEnd: true,
  adapter: 'typeorm',
  async connect(url) {
    const dataSource = await typeOrmDataSource(url);
    return {
      outside: dataSource.manager,
      native: {
        insert: async (tx, value) => void (await (tx as EntityManager).query(INSERT_NATIVE, [value])),
        txid: async (tx) => txidOf(await (tx as EntityManager).query(TXID)),
      },
      transaction: (work, end = 'commit') => viaCallback((callback) => dataSource.transaction((manager) => callback(manager)), work, end),
      run: (work) => dataSource.transaction(work),
      query: (sql, params = []) => dataSource.query(sql, params),
      close: () => dataSource.destroy(),
    };
  },
};

/** A query runner of `dataSource` after startTransaction(), `work` with it, then commitTransaction() (or a rollback on request, or when `work` throws). */
async function inQueryRunnerTransaction<T>(dataSource: DataSource, work: (tx: unknown) => Promise<T>, end: 'commit' | 'rollback'): Promise<T> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.startTransaction();
    let value;
    try {
      value = await work(runner);
    } catch (error) {
      await runner.rollbackTransaction();
      throw error;
    }
    await (end === 'commit' ? runner.commitTransaction() : runner.rollbackTransaction());
    return value;
  } finally {
    await runner.release();
  }
}

export const TYPEORM_QUERY_RUNNER: OrmTransactionKind = {
  name: 'typeorm QueryRunner',
  refusedAfterEnd: true,
  adapter: 'typeorm',
  async connect(url) {
    const dataSource = await typeOrmDataSource(url);
    return {
      outside: dataSource.createQueryRunner(),
      native: {
        insert: async (tx, value) => void (await (tx as QueryRunner).query(INSERT_NATIVE, [value])),
        txid: async (tx) => txidOf(await (tx as QueryRunner).query(TXID)),
      },
      transaction: (work, end = 'commit') => inQueryRunnerTransaction(dataSource, work, end),
      run: (work) => inQueryRunnerTransaction(dataSource, work, 'commit'),
      query: (sql, params = []) => dataSource.query(sql, params),
      close: () => dataSource.destroy(),
    };
  },
};

/** Prisma's default 5 s transaction timeout is too short for a busy test machine. */
const PRISMA_TIMEOUTS = { maxWait: 30_000, timeout: 60_000 };

export const PRISMA: OrmTransactionKind = {
  name: 'prisma interactive transaction',
  refusedAfterEnd: true,
  adapter: 'prisma',
  async connect(url) {
    const prisma = prismaClient(url);
    return {
      outside: prisma,
      native: {
        insert: async (tx, value) => void (await (tx as PrismaTx).$executeRaw`INSERT INTO orm_native_rows (v) VALUES (${value})`),
        txid: async (tx) => txidOf(await (tx as PrismaTx).$queryRaw`SELECT txid_current()::text AS txid`),
      },
      transaction: (work, end = 'commit') => viaCallback((callback) => prisma.$transaction(callback, PRISMA_TIMEOUTS), work, end),
      run: (work) => prisma.$transaction(work, PRISMA_TIMEOUTS),
      query: async (sql, params = []) => (await prisma.$queryRawUnsafe(sql, ...params)) as Array<Record<string, unknown>>,
      close: () => prisma.$disconnect(),
    };
  },
};

const KYSELY_NATIVE: NativeOperations = {
  insert: async (tx, value) => void (await kyselySql`INSERT INTO orm_native_rows (v) VALUES (${value})`.execute(tx as KyselyTransaction<Record<string, never>>)),
  txid: async (tx) => txidOf((await kyselySql<{ txid: string }>`SELECT txid_current()::text AS txid`.execute(tx as KyselyTransaction<Record<string, never>>)).rows),
};

function kyselyDb(url: string): Kysely<Record<string, never>> {
  return new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool: pgPool(url) }) });
}

export const KYSELY: OrmTransactionKind = {
  name: 'kysely transaction',
  refusedAfterEnd: true,
  adapter: 'kysely',
  async connect(url) {
    const db = kyselyDb(url);
    const pool = pgPool(url);
    return {
      outside: db,
      native: KYSELY_NATIVE,
      transaction: (work, end = 'commit') => viaCallback((callback) => db.transaction().execute((trx) => callback(trx)), work, end),
      run: (work) => db.transaction().execute(work),
      query: async (sql, params = []) => (await pool.query(sql, params)).rows,
      close: async () => {
        await db.destroy();
        await pool.end();
      },
    };
  },
};

/** `db.startTransaction()`, `work` with its trx, then commit (or a rollback on request, or when `work` throws). */
async function inControlledKyselyTransaction<T>(db: Kysely<Record<string, never>>, work: (tx: unknown) => Promise<T>, end: 'commit' | 'rollback'): Promise<T> {
  const trx = await db.startTransaction().execute();
  let value;
  try {
    value = await work(trx);
  } catch (error) {
    await trx.rollback().execute();
    throw error;
  }
  await (end === 'commit' ? trx.commit() : trx.rollback()).execute();
  return value;
}

export const KYSELY_CONTROLLED: OrmTransactionKind = {
  name: 'kysely controlled transaction',
  refusedAfterEnd: true,
  adapter: 'kysely',
  async connect(url) {
    const db = kyselyDb(url);
    const pool = pgPool(url);
    return {
      outside: db,
      native: KYSELY_NATIVE,
      transaction: (work, end = 'commit') => inControlledKyselyTransaction(db, work, end),
      run: (work) => inControlledKyselyTransaction(db, work, 'commit'),
      query: async (sql, params = []) => (await pool.query(sql, params)).rows,
      close: async () => {
        await db.destroy();
        await pool.end();
      },
    };
  },
};

export const DRIZZLE: OrmTransactionKind = {
  name: 'drizzle (node-postgres) transaction',
  refusedAfterEnd: false,
  adapter: 'drizzle',
  async connect(url) {
    const pool = pgPool(url);
    const db = drizzle(pool);
    return {
      outside: db,
      native: {
        insert: async (tx, value) => void (await (tx as DrizzleTx).execute(drizzleSql`INSERT INTO orm_native_rows (v) VALUES (${value})`)),
        txid: async (tx) => txidOf((await (tx as DrizzleTx).execute(drizzleSql`SELECT txid_current()::text AS txid`)).rows),
      },
      transaction: (work, end = 'commit') => viaCallback((callback) => db.transaction((tx) => callback(tx)), work, end),
      run: (work) => db.transaction(work),
      query: async (sql, params = []) => (await pool.query(sql, params)).rows,
      close: () => pool.end(),
    };
  },
};

export const KNEX: OrmTransactionKind = {
  name: 'knex transaction',
  refusedAfterEnd: true,
  adapter: 'knex',
  async connect(url) {
    const knex = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 4 } });
    const pool = pgPool(url);
    return {
      outside: knex,
      native: {
        insert: async (tx, value) => void (await (tx as Knex.Transaction)(NATIVE_TABLE).insert({ v: value })),
        txid: async (tx) => txidOf((await (tx as Knex.Transaction).raw('SELECT txid_current()::text AS txid')).rows),
      },
      transaction: (work, end = 'commit') => viaCallback((callback) => knex.transaction((trx) => callback(trx)), work, end),
      run: (work) => knex.transaction(work),
      query: async (sql, params = []) => (await pool.query(sql, params)).rows,
      close: async () => {
        await knex.destroy();
        await pool.end();
      },
    };
  },
};

/** Every client, in the order of the built-in adapters. */
export const ORM_TRANSACTIONS: readonly OrmTransactionKind[] = [
  TYPEORM_QUERY_RUNNER,
  TYPEORM_ENTITY_MANAGER,
  PRISMA,
  KYSELY,
  KYSELY_CONTROLLED,
  DRIZZLE,
  KNEX,
  PG_CLIENT,
];
