import { Transactional, TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Inject, INestApplication, Injectable } from '@nestjs/common';
import { ambientFromTransactionHost, DelayContext, DelayModuleOptions, DelayService, OnDelayExpired } from 'nestjs-delay';
import { BUILT_IN_TRANSACTION_ADAPTERS } from '../../libs/delay/src/transactions/built-in-adapters';
import { bootDelayApp, pollUntil } from '../conformance/support/driver-fixture';
import { TestPostgresServer } from '../support/postgres-server';
import { bootClsTypeOrm } from './support/cls-typeorm-app';
import { DRIZZLE, KNEX, KYSELY, NATIVE_TABLE, NATIVE_TABLE_DDL, NativeOperations, OrmConnection, PG_CLIENT, PRISMA, TYPEORM_ENTITY_MANAGER } from './support/orm-transactions';

jest.setTimeout(60_000);

const TOPIC = 'invoice.issue';
const FOLLOW_UP = 'invoice.remind';
const BATCH_TOPIC = 'invoice.lines';
/** How the handler writes its domain row: the client's own API on the transaction object it is handed. */
const DOMAIN_WRITES = Symbol('domain writes');
/** The handler throws after its writes on these attempts of a key. */
const failOn = new Map<string, number[]>();

interface Run {
  readonly key: string;
  readonly attempt: number;
  /** The built-in adapters that recognise `context.transaction`. */
  readonly adapters: string[];
}

const adaptersOf = (transaction: unknown): string[] => [...new Set(BUILT_IN_TRANSACTION_ADAPTERS.filter((adapter) => adapter.matches(transaction)).map((adapter) => adapter.name))];

function failIfPlanned(key: string, attempt: number): void {
  if (failOn.get(key)?.includes(attempt)) throw new Error(`attempt ${attempt} of ${key} fails after its writes`);
}

const HANDLER_OPTIONS = { transactional: true, attempts: 3, backoff: '100ms', timeout: '30s' } as const;

/** The domain rows a run writes: one for an action, one per item for a batch (collect). */
function domainValues({ key, attempt, items }: DelayContext<unknown, string>): string[] {
  return items ? items.map((item) => `${key}#${attempt}:${item}`) : [`${key}#${attempt}`];
}

/** Transactional handlers written against the client's transaction object. */
@Injectable()
class InvoiceHandlers {
  readonly runs: Run[] = [];

  constructor(
    private readonly delay: DelayService,
    @Inject(DOMAIN_WRITES) private readonly domain: NativeOperations,
  ) {}

  @OnDelayExpired(TOPIC, HANDLER_OPTIONS)
  issue(context: DelayContext<unknown, string>): Promise<void> {
    return this.run(context);
  }

  @OnDelayExpired(BATCH_TOPIC, HANDLER_OPTIONS)
  issueBatch(context: DelayContext<unknown, string>): Promise<void> {
    return this.run(context);
  }

  private async run(context: DelayContext<unknown, string>): Promise<void> {
    const { key, attempt, transaction } = context;
    this.runs.push({ key, attempt, adapters: adaptersOf(transaction) });
    for (const value of domainValues(context)) await this.domain.insert(transaction, value);
    // No transaction passed: the follow-up joins the run's. One per attempt, so that a rolled-back one shows.
    await this.delay.schedule(FOLLOW_UP, `${key}#${attempt}`, { delay: '1h', payload: { attempt } });
    failIfPlanned(key, attempt);
  }
}

/** An application's service: @Transactional(), writing through TransactionHost.tx, no transaction argument anywhere. */
@Injectable()
class Invoices {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly delay: DelayService,
  ) {}

  @Transactional()
  async issue(values: readonly string[], followUp: string, attempt: number): Promise<void> {
    for (const value of values) await this.txHost.tx.query(`INSERT INTO ${NATIVE_TABLE} (v) VALUES ($1)`, [value]);
    await this.delay.schedule(FOLLOW_UP, followUp, { delay: '1h', payload: { attempt } });
  }
}

/** The transactional handlers of an application on @nestjs-cls/transactional: they call the @Transactional() service. */
@Injectable()
class ClsInvoiceHandlers {
  readonly runs: Run[] = [];
  /** Per run: whether TransactionHost.tx, inside the handler, is the run's transaction. */
  readonly ambientIsRun: boolean[] = [];

  constructor(
    private readonly invoices: Invoices,
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
  ) {}

  @OnDelayExpired(TOPIC, HANDLER_OPTIONS)
  issue(context: DelayContext<unknown, string>): Promise<void> {
    return this.run(context);
  }

  @OnDelayExpired(BATCH_TOPIC, HANDLER_OPTIONS)
  issueBatch(context: DelayContext<unknown, string>): Promise<void> {
    return this.run(context);
  }

  private async run(context: DelayContext<unknown, string>): Promise<void> {
    const { key, attempt, transaction } = context;
    this.runs.push({ key, attempt, adapters: adaptersOf(transaction) });
    this.ambientIsRun.push(this.txHost.isTransactionActive() && this.txHost.tx === transaction);
    await this.invoices.issue(domainValues(context), `${key}#${attempt}`, attempt);
    failIfPlanned(key, attempt);
  }
}

/** One way an application gives its transactional handlers their transaction. */
interface HandlerClient {
  readonly name: string;
  /** The built-in adapter that must recognise the run's transaction object. */
  readonly adapter: string;
  /** Boots the application (driver tables in `schema`); resolves it with its handlers and what to close afterwards. */
  boot(server: TestPostgresServer, schema: string): Promise<{ app: INestApplication; runs: () => readonly Run[]; close: () => Promise<void> }>;
}

const driverOptions = (server: TestPostgresServer, schema: string): DelayModuleOptions['driver'] => ({ type: 'postgres', connectionString: server.url, schema, commandTimeout: '10s' });

/** The driver's own transaction (no `transactions.run`): the handler gets the driver's pg client. */
const PG_DEFAULT: HandlerClient = {
  name: "pg, the driver's own connection (default)",
  adapter: 'pg',
  async boot(server, schema) {
    // The pg client's own API on the transaction; the connection's pool itself is not used.
    const pg = await PG_CLIENT.connect(server.url);
    const app = await bootDelayApp({ driver: driverOptions(server, schema), shutdownTimeout: '1s' }, [InvoiceHandlers, { provide: DOMAIN_WRITES, useValue: pg.native }]);
    const handlers = app.get(InvoiceHandlers);
    return {
      app,
      runs: () => handlers.runs,
      close: async () => {
        await app.close();
        await pg.close();
      },
    };
  },
};

/** `transactions.run` of the application's own client (the OrmConnection's `run`, as an app writes it). */
function viaRun(kind: { name: string; adapter: string; connect(url: string): Promise<OrmConnection> }): HandlerClient {
  return {
    name: `${kind.name}, via transactions.run`,
    adapter: kind.adapter,
    async boot(server, schema) {
      const orm = await kind.connect(server.url);
      const app = await bootDelayApp({ driver: driverOptions(server, schema), transactions: { run: (work) => orm.run(work) }, shutdownTimeout: '1s' }, [
        InvoiceHandlers,
        { provide: DOMAIN_WRITES, useValue: orm.native },
      ]);
      const handlers = app.get(InvoiceHandlers);
      return {
        app,
        runs: () => handlers.runs,
        close: async () => {
          await app.close();
          await orm.close();
        },
      };
    },
  };
}

const CLS_TYPEORM: HandlerClient = {
  name: '@nestjs-cls/transactional (TypeORM adapter), a @Transactional() service',
  adapter: 'typeorm',
  async boot(server, schema) {
    const app = await bootClsTypeOrm(
      server,
      (txHost) => ({
        driver: driverOptions(server, schema),
        transactions: { ambient: ambientFromTransactionHost(txHost), run: (work) => txHost.withTransaction(() => work(txHost.tx)) },
        shutdownTimeout: '1s',
      }),
      [Invoices, ClsInvoiceHandlers],
    );
    const handlers = app.get(ClsInvoiceHandlers);
    return {
      app,
      runs: () => {
        // Every run saw its transaction as the ambient one, the one its @Transactional() service joined.
        expect(handlers.ambientIsRun.every(Boolean)).toBe(true);
        return handlers.runs;
      },
      close: () => app.close(),
    };
  },
};

const CLIENTS: readonly HandlerClient[] = [PG_DEFAULT, ...[PG_CLIENT, TYPEORM_ENTITY_MANAGER, PRISMA, KYSELY, DRIZZLE, KNEX].map(viaRun), CLS_TYPEORM];

/**
 * A transactional handler on each client an application may hold its
 * transaction with, on the real postgres driver: the handler writes a row
 * through the client's transaction object (the client's own API) and
 * schedules a follow-up through DelayService with no transaction passed.
 * Both commit with the action's completion, or neither does: a run that
 * throws leaves nothing, and its retry, the next attempt, commits once. A
 * batch of collect is one action: all its items commit, or none.
 */
describe('transactional handlers on every client', () => {
  let server: TestPostgresServer;

  beforeAll(async () => {
    server = await TestPostgresServer.start();
    await server.admin(NATIVE_TABLE_DDL, [], true);
  }, 120_000);
  afterAll(() => server?.dispose());
  afterEach(() => failOn.clear());

  describe.each(CLIENTS.map((client, index) => [client.name, client, index] as const))('%s', (_name, client, index) => {
    let app: INestApplication;
    let runs: () => readonly Run[];
    let close: (() => Promise<void>) | undefined;
    let delay: DelayService;
    const key = (name: string): string => `c${index}-${name}`;

    beforeAll(async () => {
      ({ app, runs, close } = await client.boot(server, `txh_clients_${index}_${process.pid}`));
      delay = app.get(DelayService);
    }, 120_000);
    afterAll(() => close?.());

    const domainRows = async (of: string): Promise<string[]> =>
      (await server.admin(`SELECT v FROM ${NATIVE_TABLE} WHERE v LIKE $1 ORDER BY v`, [`${of}#%`], true)).map((row) => String(row.v));
    const runsOf = (of: string): number[] => runs().filter((run) => run.key === of).map((run) => run.attempt);
    const completed = async (of: string): Promise<void> => pollUntil(async () => (await delay.get(TOPIC, of)) === null, `the completion of ${of}`, 30_000, 20);

    it(`hands the handler a transaction object the ${client.adapter} adapter recognises; the row, the follow-up and the completion commit together`, async () => {
      const invoice = key('ok');
      await delay.schedule(TOPIC, invoice, { delay: 0 });
      await completed(invoice);
      expect(runs().filter((run) => run.key === invoice)).toEqual([{ key: invoice, attempt: 1, adapters: [client.adapter] }]);
      expect(await domainRows(invoice)).toEqual([`${invoice}#1`]);
      expect(await delay.get(FOLLOW_UP, `${invoice}#1`)).toMatchObject({ payload: { attempt: 1 } });
    });

    it('a throw leaves neither the row nor the follow-up; the retry (attempt 2) commits once', async () => {
      const invoice = key('thrown');
      failOn.set(invoice, [1]);
      await delay.schedule(TOPIC, invoice, { delay: 0 });
      await completed(invoice);
      expect(runsOf(invoice)).toEqual([1, 2]);
      // Attempt 1 wrote its row and its follow-up, then threw: neither remains.
      expect(await domainRows(invoice)).toEqual([`${invoice}#2`]);
      expect(await delay.get(FOLLOW_UP, `${invoice}#1`)).toBeNull();
      expect(await delay.get(FOLLOW_UP, `${invoice}#2`)).toMatchObject({ payload: { attempt: 2 } });
      expect(await delay.countDead(TOPIC)).toBe(0);
    });

    it('a batch (collect) is one run: its items are written together, a throw rolls them all back, the retry commits the whole batch once', async () => {
      const invoice = key('batch');
      failOn.set(invoice, [1]);
      // A window longer than the three calls take on a busy machine: the three lines are one batch.
      for (const line of ['a', 'b', 'c']) await delay.collect(BATCH_TOPIC, invoice, line, { window: 1_000 });
      await pollUntil(async () => runsOf(invoice).includes(2) && (await delay.count(BATCH_TOPIC)) === 0, `the batch ${invoice} completed`, 30_000, 20);
      expect(runsOf(invoice)).toEqual([1, 2]);
      expect(await domainRows(invoice)).toEqual([`${invoice}#2:a`, `${invoice}#2:b`, `${invoice}#2:c`]);
      expect(await delay.get(FOLLOW_UP, `${invoice}#1`)).toBeNull();
      expect(await delay.get(FOLLOW_UP, `${invoice}#2`)).toMatchObject({ payload: { attempt: 2 } });
      expect(await delay.countDead(BATCH_TOPIC)).toBe(0);
    });
  });
});
