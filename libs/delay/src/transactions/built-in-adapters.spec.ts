import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TransactionNotActiveError } from '../errors/transaction-not-active.error';
import { UnsupportedTransactionClientError } from '../errors/unsupported-transaction-client.error';
import { BUILT_IN_TRANSACTION_ADAPTERS } from './built-in-adapters';
import { sqlStateOf } from './sql-state';
import { TransactionBinder } from './transaction-binder';

/**
 * What the adapters decide from an object's shape alone. Their SQL is
 * tested on a real PostgreSQL with each real client in
 * test/transactions/orm-adapters.e2e-spec.ts; the objects here only stand
 * for clients this machine cannot run (another database).
 */
describe('built-in transaction adapters, by shape', () => {
  const binder = new TransactionBinder({ name: 'txdriver', supportsTransactions: true }, undefined);

  it('the library imports none of the clients it adapts to', () => {
    const clients = ['pg', 'typeorm', '@prisma/client', 'kysely', 'drizzle-orm', 'knex', 'nestjs-cls', '@nestjs-cls/transactional'];
    for (const file of readdirSync(__dirname).filter((name) => name.endsWith('.ts') && !name.endsWith('.spec.ts'))) {
      const source = readFileSync(join(__dirname, file), 'utf8');
      for (const client of clients) {
        expect({ file, imports: new RegExp(`(from|require\\()\\s*'${client}(/[^']*)?'`).test(source) }).toEqual({ file, imports: false });
      }
    }
  });

  it('a TypeORM data source of another database is refused with UnsupportedTransactionClientError', () => {
    const runner = {
      isTransactionActive: true,
      isReleased: false,
      dataSource: { options: { type: 'mysql' } },
      query: async () => ({ records: [] }),
      startTransaction: async () => undefined,
      commitTransaction: async () => undefined,
      rollbackTransaction: async () => undefined,
      release: async () => undefined,
    };
    expect(() => binder.bind(runner)).toThrow(UnsupportedTransactionClientError);
    expect(() => binder.bind(runner)).toThrow(/typeorm transaction .* data source is of type "mysql".*PostgreSQL only/);
  });

  it('a knex transaction on another database is refused with UnsupportedTransactionClientError', () => {
    const trx = Object.assign(() => undefined, {
      isTransaction: true,
      isCompleted: () => false,
      client: { dialect: 'mysql' },
      raw: async () => [[], []],
      transaction: async () => undefined,
      select: () => undefined,
    });
    expect(() => binder.bind(trx)).toThrow(/knex transaction .* client is "mysql"/);
  });

  it('a result that is neither rows nor { rows } is refused rather than read as no rows', async () => {
    const client = { query: async () => 42, connect: async () => undefined, escapeLiteral: (value: string) => value };
    const bound = binder.bind(client);
    expect(bound?.adapter).toBe('pg');
    await expect(bound?.query('SELECT 1', [])).rejects.toThrow(UnsupportedTransactionClientError);
  });

  it('a pg Pool is refused: its statements are on no one connection', () => {
    const pool = { query: async () => ({ rows: [] }), connect: async () => undefined, totalCount: 1, idleCount: 1 };
    expect(() => binder.bind(pool)).toThrow(TransactionNotActiveError);
    expect(() => binder.bind(pool)).toThrow(/a Pool runs each statement on whichever connection is free/);
  });

  it("the application's own adapters are tried before the built-in ones, and their check is called", () => {
    const checked: unknown[] = [];
    const client = { query: async () => ({ rows: [] }), connect: async () => undefined, escapeLiteral: (value: string) => value };
    const own = new TransactionBinder(
      { name: 'txdriver', supportsTransactions: true },
      { adapters: [{ name: 'mine', matches: (tx: unknown): tx is typeof client => tx === client, check: (tx) => void checked.push(tx), query: async () => [] }] },
    );
    expect(own.bind(client)?.adapter).toBe('mine');
    expect(checked).toEqual([client]);
    expect(binder.bind(client)?.adapter).toBe('pg');
  });

  it('adapters are tried with the most specific shapes first and the pg client last', () => {
    expect(BUILT_IN_TRANSACTION_ADAPTERS.map((adapter) => adapter.name)).toEqual(['typeorm', 'typeorm', 'prisma', 'kysely', 'drizzle', 'knex', 'pg']);
  });

  describe('sqlStateOf', () => {
    it.each([
      ['pg, knex, Kysely: code', Object.assign(new Error('duplicate'), { code: '23505' }), '23505'],
      ['Drizzle: the cause', new Error('Failed query', { cause: Object.assign(new Error('x'), { code: '40001' }) }), '40001'],
      [
        'Prisma: the driver adapter error, not its own P code',
        Object.assign(new Error('Raw query failed'), { code: 'P2010', clientVersion: '7', meta: { driverAdapterError: { cause: { originalCode: '25P02', code: '25P02' } } } }),
        '25P02',
      ],
      ['Prisma without a database code', Object.assign(new Error('x'), { code: 'P2010', clientVersion: '7', meta: {} }), undefined],
      ['a Node error code', Object.assign(new Error('x'), { code: 'ECONNRESET' }), undefined],
      ['not an object', 'boom', undefined],
    ])('%s', (_name, error, state) => {
      expect(sqlStateOf(error)).toBe(state);
    });
  });
});
