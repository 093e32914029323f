// Closing the driver's pools: their idle connections are ended, but the server may still be finishing one when
// close() resolves, and a server shut down right after (the shop stops its embedded PostgreSQL once the app has
// closed) then ends that connection with an error. An error on a connection the driver is closing is expected: it is
// not a warning.
import { Logger } from '@nestjs/common';
import { Client } from 'pg';
import { PostgresConnection } from '../../libs/delay/src/drivers/postgres/postgres-connection';
import { PostgresHandlerTransactions } from '../../libs/delay/src/drivers/postgres/postgres-handler-transactions';
import { pollUntil } from '../conformance/support/driver-fixture';
import { TestPostgresServer } from '../support/postgres-server';

/** A pool of the driver's with one idle connection: the backend's pid, and how to close the pool. */
interface OpenedPool {
  readonly pid: number;
  close(): Promise<void>;
}

const POOLS: Array<[string, (url: string) => Promise<OpenedPool>]> = [
  [
    "the driver's pool",
    async (url) => {
      const connection = new PostgresConnection({ connectionString: url, pool: undefined, commandTimeoutMs: 2_000, pooler: 'session' });
      const [{ pid }] = await connection.query('SELECT pg_backend_pid() AS pid');
      return { pid: Number(pid), close: () => connection.close() };
    },
  ],
  [
    "the transactional handlers' pool",
    async (url) => {
      const transactions = new PostgresHandlerTransactions(url, undefined, 2_000);
      const pid = await transactions.withConnection(async (client) => Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid));
      return { pid, close: () => transactions.close() };
    },
  ],
];

describe('postgres: closing the pools', () => {
  let server: TestPostgresServer;

  beforeAll(async () => {
    server = await TestPostgresServer.start();
  }, 60_000);

  afterAll(async () => {
    await server.dispose();
  });

  it.each(POOLS)('%s: an idle connection the server ends while the pool closes it logs no warning', async (_, open) => {
    const warn = jest.spyOn(Logger.prototype, 'warn');
    const debug = jest.spyOn(Logger.prototype, 'debug');
    const pool = await open(server.url);
    const admin = new Client({ connectionString: server.url });
    await admin.connect();
    let stopped = false;
    try {
      // The backend is frozen before the pool ends its connection: it has not read the goodbye when close() resolves.
      process.kill(pool.pid, 'SIGSTOP');
      stopped = true;
      await pool.close();
      // As a server shutting down does: the backend ends its session with "terminating connection due to
      // administrator command", which reaches the client's still-open socket once it runs again.
      await admin.query('SELECT pg_terminate_backend($1)', [pool.pid]);
      process.kill(pool.pid, 'SIGCONT');
      stopped = false;
      // The error did come (the case happened), and was heard as expected.
      const heard = (): boolean => debug.mock.calls.some(([message]) => String(message).includes('while the pool closed'));
      await pollUntil(heard, 'the error of the connection being closed', 5_000, 10);
      const warnings = warn.mock.calls.map(([message]) => String(message));
      expect(warnings.filter((message) => message.includes('connection'))).toEqual([]);
    } finally {
      if (stopped) process.kill(pool.pid, 'SIGCONT');
      await admin.end();
      warn.mockRestore();
      debug.mockRestore();
    }
  }, 30_000);
});
