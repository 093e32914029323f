import { connectionLost, transactionEnded } from './client-errors';
import { sqlStateOf } from './sql-state';

/**
 * The errors clients raise themselves, without a SQLSTATE, in the shapes
 * they have (the e2e tests meet the real ones: a Kysely or Prisma
 * transaction used after its end, in test/transactions/atomicity).
 */
describe('errors a transaction client raises itself', () => {
  /** Prisma's error for a transaction already closed: its own code, which looks like a SQLSTATE. */
  const prismaClosed = Object.assign(new Error('Transaction API error: Transaction already closed: A query cannot be executed on a committed transaction.'), {
    code: 'P2028',
    clientVersion: '7.0.0',
  });

  it('a transaction over: Kysely, knex, pg released, Prisma P2028', () => {
    expect(transactionEnded(new Error('Transaction is already committed'))).toBe('Transaction is already committed');
    expect(transactionEnded(new Error('Transaction is already rolled back'))).toBeDefined();
    expect(transactionEnded(new Error('Transaction query already complete, run with DEBUG=knex:tx for more info'))).toBeDefined();
    expect(transactionEnded(new Error('Client was closed and is not queryable'))).toBeDefined();
    expect(transactionEnded(prismaClosed)).toMatch(/already closed/);
    expect(transactionEnded(new Error('boom'))).toBeUndefined();
    // A code P2028 that is no Prisma error says nothing.
    expect(transactionEnded(Object.assign(new Error('x'), { code: 'P2028' }))).toBeUndefined();
  });

  it("Prisma's own codes are no SQLSTATE, with or without meta; the database's is read from the driver adapter's error", () => {
    expect(sqlStateOf(prismaClosed)).toBeUndefined();
    const fromDatabase = Object.assign(new Error('Raw query failed'), {
      code: 'P2010',
      clientVersion: '7.0.0',
      meta: { driverAdapterError: { cause: { originalCode: '23505' } } },
    });
    expect(sqlStateOf(fromDatabase)).toBe('23505');
  });

  it('a connection lost: socket errors, pg messages, nested in cause or driverError, Prisma connection codes', () => {
    expect(connectionLost(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', errno: -104, syscall: 'read' }))).toBe(true);
    expect(connectionLost(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(connectionLost(Object.assign(new Error('query failed'), { driverError: new Error('Connection terminated unexpectedly') }))).toBe(true);
    expect(connectionLost(new Error('Failed query', { cause: Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }) }))).toBe(true);
    expect(connectionLost(Object.assign(new Error("Server has closed the connection."), { code: 'P1017', clientVersion: '7.0.0' }))).toBe(true);
    expect(connectionLost(new Error('boom'))).toBe(false);
    expect(connectionLost(Object.assign(new TypeError('bad argument'), { code: 'ERR_INVALID_ARG_TYPE' }))).toBe(false);
    expect(connectionLost(prismaClosed)).toBe(false);
  });
});
