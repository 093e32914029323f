import { Client } from 'pg';
import { TestPostgresServer } from './postgres-server';

/** The suite's own PostgreSQL: it starts, keeps committed data across kill -9, and answers nothing while paused. */
describe('TestPostgresServer', () => {
  let server: TestPostgresServer;

  beforeAll(async () => {
    server = await TestPostgresServer.start();
  }, 60_000);
  afterAll(() => server.dispose());

  it('keeps a committed row across kill -9 and a restart', async () => {
    await server.admin('CREATE TABLE kept (id int primary key)', [], true);
    await server.admin('INSERT INTO kept VALUES (1)', [], true);
    if (process.env.TEST_DATABASE_URL) return;
    await server.kill();
    await server.boot();
    expect(await server.admin('SELECT id FROM kept', [], true)).toEqual([{ id: 1 }]);
  });

  it('answers nothing while paused, and everything after resume', async () => {
    if (process.env.TEST_DATABASE_URL) return;
    const client = new Client({ connectionString: server.url });
    await client.connect();
    try {
      server.pause();
      let answered = false;
      const query = client.query('SELECT 1 AS one').then((result) => {
        answered = true;
        return result.rows;
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(answered).toBe(false);
      server.resume();
      expect(await query).toEqual([{ one: 1 }]);
    } finally {
      server.resume();
      await client.end();
    }
  });
});
