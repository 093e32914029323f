import { DriverTransaction, TransactionNotActiveError } from 'nestjs-delay';
import { BUILT_IN_TRANSACTION_ADAPTERS } from '../../libs/delay/src/transactions/built-in-adapters';
import { sqlStateOf } from '../../libs/delay/src/transactions/sql-state';
import { TransactionBinder } from '../../libs/delay/src/transactions/transaction-binder';
import { TestPostgresServer } from '../support/postgres-server';
import { NATIVE_TABLE, NATIVE_TABLE_DDL, ORM_TRANSACTIONS, OrmConnection } from './support/orm-transactions';

jest.setTimeout(60_000);

const ADAPTER_TABLE = 'orm_adapter_rows';

/**
 * Each built-in adapter, on transactions its own client opens on a real
 * PostgreSQL: what runs through the adapter is part of that transaction
 * (same txid, sees its uncommitted rows, commits and rolls back with it),
 * parameters arrive as they were given, and what the client hands out
 * outside a transaction is refused.
 */
describe('built-in transaction adapters on a real PostgreSQL', () => {
  let server: TestPostgresServer;
  /** The binder DelayService uses, for a driver that joins transactions. */
  const binder = new TransactionBinder({ name: 'txprobe', supportsTransactions: true }, undefined);
  const bind = (tx: unknown): DriverTransaction => {
    const bound = binder.bind(tx);
    if (!bound) throw new Error('bind returned no transaction');
    return bound;
  };

  beforeAll(async () => {
    server = await TestPostgresServer.start();
    await server.admin(`${NATIVE_TABLE_DDL}; CREATE TABLE ${ADAPTER_TABLE} (v text NOT NULL)`, [], true);
  });
  afterAll(async () => {
    await server?.stop();
    await server?.dispose();
  });

  describe.each(ORM_TRANSACTIONS)('$name', (kind) => {
    let orm: OrmConnection;
    const count = async (table: string): Promise<number> => Number((await orm.query(`SELECT count(*)::int AS n FROM ${table}`))[0].n);

    beforeAll(async () => {
      orm = await kind.connect(server.url);
    });
    afterAll(() => orm?.close());
    beforeEach(() => orm.query(`TRUNCATE ${NATIVE_TABLE}, ${ADAPTER_TABLE}`));

    it(`is recognised by the ${kind.adapter} adapter, and by no other`, async () => {
      await orm.transaction(async (tx) => {
        expect(bind(tx).adapter).toBe(kind.adapter);
        expect([...new Set(BUILT_IN_TRANSACTION_ADAPTERS.filter((adapter) => adapter.matches(tx)).map((adapter) => adapter.name))]).toEqual([kind.adapter]);
      });
    });

    it.each(['rollback', 'commit'] as const)('runs in the caller\'s transaction: its txid, its uncommitted rows, and gone or kept with it (%s)', async (end) => {
      await orm.transaction(async (tx) => {
        await orm.native.insert(tx, 'native-1');
        const bound = bind(tx);
        const [{ txid }] = await bound.query('SELECT txid_current()::text AS txid', []);
        expect(txid).toBe(await orm.native.txid(tx));
        expect(await bound.query(`SELECT v FROM ${NATIVE_TABLE}`, [])).toEqual([{ v: 'native-1' }]);
        expect(await bound.query(`INSERT INTO ${ADAPTER_TABLE} (v) VALUES ($1) RETURNING v`, ['adapter-1'])).toEqual([{ v: 'adapter-1' }]);
        // Not visible outside before the end of the transaction.
        expect(await count(ADAPTER_TABLE)).toBe(0);
      }, end);
      const kept = end === 'commit' ? 1 : 0;
      expect(await count(NATIVE_TABLE)).toBe(kept);
      expect(await count(ADAPTER_TABLE)).toBe(kept);
    });

    it('parameters of several types arrive as given, whatever text surrounds the placeholders', async () => {
      const text = "it's a '?' and $2 -- not a comment /* nor this */ ??";
      const rows = await orm.transaction((tx) =>
        bind(tx).query(
          `SELECT $1::text AS text, $2::int AS int, $3::float8 AS float, $4::text AS nothing, $5::jsonb AS json,
                  $6::bigint::text AS big, $7::boolean AS flag, $1::text AS again, length($1::text) AS len,
                  array_to_string($8::text[], '|') AS list, $9::timestamptz = '2026-01-02T03:04:05.678Z'::timestamptz AS same_time`,
          [text, 42, 1.5, null, '{"a": [1, "?"], "b": "$1"}', '9007199254740993', true, ['x', 'y?'], '2026-01-02T03:04:05.678Z'],
        ),
      );
      expect(rows).toEqual([
        { text, int: 42, float: 1.5, nothing: null, json: { a: [1, '?'], b: '$1' }, big: '9007199254740993', flag: true, again: text, len: text.length, list: 'x|y?', same_time: true },
      ]);
    });

    it('int4, float8, text, boolean and jsonb values come back alike on every client (int8 and timestamps do not: select them as these)', async () => {
      const rows = await orm.transaction((tx) =>
        bind(tx).query(
          `SELECT 7::int AS n, (extract(epoch FROM $1::timestamptz) * 1000)::float8 AS due_ms, $2::bigint::text AS id,
                  to_char($1::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS iso, true AS flag, '{"k": [1]}'::jsonb AS doc`,
          ['2026-01-02T03:04:05.678Z', '9007199254740993'],
        ),
      );
      expect(rows).toEqual([{ n: 7, due_ms: Date.parse('2026-01-02T03:04:05.678Z'), id: '9007199254740993', iso: '2026-01-02T03:04:05.678Z', flag: true, doc: { k: [1] } }]);
    });

    it('question marks and $n inside strings, quoted names, comments and dollar quotes are text, not placeholders', async () => {
      const rows = await orm.transaction((tx) =>
        bind(tx).query(
          `SELECT '?' || $1::text AS a, 'x$1y?' AS b, $$ $1 ? $$ AS c, $q$it's $2?$q$ AS d, E'\\'$1?' AS e, 1 AS "who?$1" -- $1 ?
           /* $2 ? /* nested $1 */ ? */, '{"k": 1}'::jsonb ? 'k' AS has, $2::int AS n`,
          ['z', 7],
        ),
      );
      expect(rows).toEqual([{ a: '?z', b: 'x$1y?', c: ' $1 ? ', d: "it's $2?", e: "'$1?", 'who?$1': 1, has: true, n: 7 }]);
    });

    it('an UPDATE or DELETE resolves its RETURNING rows, and a statement without rows resolves none', async () => {
      await orm.transaction(async (tx) => {
        const bound = bind(tx);
        await bound.query(`INSERT INTO ${ADAPTER_TABLE} (v) VALUES ($1), ($2)`, ['a', 'b']);
        expect(await bound.query(`UPDATE ${ADAPTER_TABLE} SET v = v || $1 WHERE v = $2 RETURNING v`, ['!', 'a'])).toEqual([{ v: 'a!' }]);
        expect(await bound.query(`DELETE FROM ${ADAPTER_TABLE} WHERE v = $1 RETURNING v`, ['b'])).toEqual([{ v: 'b' }]);
        expect(await bound.query(`UPDATE ${ADAPTER_TABLE} SET v = $1 WHERE v = $2`, ['c', 'none'])).toEqual([]);
        expect(await bound.query(`DELETE FROM ${ADAPTER_TABLE} WHERE v = $1`, ['a!'])).toEqual([]);
      }, 'rollback');
    });

    it("a failing statement rejects with the client's own error, whose SQLSTATE sqlStateOf reads", async () => {
      const error = await orm.transaction((tx) => bind(tx).query('SELECT 1 / $1::int AS x', [0]).then(() => undefined, (rejected: unknown) => rejected), 'rollback');
      expect(error).toBeInstanceOf(Error);
      expect(sqlStateOf(error)).toBe('22012'); // division_by_zero
    });

    if (kind.refusedAfterEnd) {
      it('a transaction object kept past its commit is refused, and nothing is written', async () => {
        const ended = await orm.transaction(async (tx) => tx);
        const write = async (): Promise<unknown> => bind(ended).query(`INSERT INTO ${ADAPTER_TABLE} (v) VALUES ($1)`, ['late']);
        await expect(write()).rejects.toThrow();
        expect(await count(ADAPTER_TABLE)).toBe(0);
      });
    }

    it('what the client hands out outside a transaction is recognised and refused with TransactionNotActiveError', () => {
      expect(() => binder.bind(orm.outside)).toThrow(TransactionNotActiveError);
      expect(() => binder.bind(orm.outside)).toThrow(new RegExp(`The ${kind.adapter} transaction passed to nestjs-delay is not open`));
    });
  });
});
