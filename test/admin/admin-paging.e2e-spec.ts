import { DelayError, InvalidPageError } from 'nestjs-delay';
import request from 'supertest';
import { TestPostgresServer } from '../support/postgres-server';
import { AdminTestApp, INVOICE, startAdminApp } from './support/admin-test-app';

/**
 * A page number or offset past what the store can read is bad input: on
 * PostgreSQL the statement took the offset as a 32-bit integer, and
 * `?page=999999999` failed there (SQLSTATE 22003) with a 500. DelayService
 * refuses such an offset itself, so every caller gets a typed error.
 */
describe('admin page and DelayService on the postgres driver: pages past the largest offset', () => {
  let postgres: TestPostgresServer;
  let target: AdminTestApp | undefined;

  beforeAll(async () => {
    postgres = await TestPostgresServer.start();
  }, 60_000);

  afterAll(async () => {
    await postgres?.dispose();
  });

  afterEach(async () => {
    await target?.app.close();
    target = undefined;
  });

  jest.setTimeout(30_000);

  async function start(): Promise<AdminTestApp> {
    target = await startAdminApp({ pageSize: 50 }, undefined, { type: 'postgres', connectionString: postgres.url });
    await target.delay.schedule(INVOICE, 'inv-1', { delay: '1h' });
    return target;
  }

  it.each([
    ['pending', ''],
    ['dead', '/dead'],
  ])('answers ?page=999999999 of the %s page with a 400 page that says why, and the last readable page with a 200', async (_page, suffix) => {
    const app = await start();
    const refused = await request(app.baseUrl).get(`/admin/delays/topics/${INVOICE}${suffix}?page=999999999`).expect(400);
    expect(refused.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(refused.text).toContain('Invalid page: page 999999999 is past the last page the admin page can show (page 20000001, at 50 per page)');
    const last = await request(app.baseUrl).get(`/admin/delays/topics/${INVOICE}${suffix}?page=20000001`).expect(200);
    expect(last.text).not.toContain('failed');
  });

  it('rejects in list and listDead an offset past 1,000,000,000 with InvalidPageError, and reads up to it', async () => {
    const app = await start();
    for (const read of [(offset: number) => app.delay.list(INVOICE, { offset }), (offset: number) => app.delay.listDead(INVOICE, { offset })]) {
      for (const offset of [2 ** 31, 99_999_999_999, Number.MAX_SAFE_INTEGER + 2, -1, 1.5]) {
        const error = await read(offset).then(
          () => undefined,
          (caught: unknown) => caught,
        );
        expect(error).toBeInstanceOf(InvalidPageError);
        expect(error).toBeInstanceOf(DelayError);
        expect(error).toMatchObject({ code: 'ERR_DELAY_INVALID_PAGE' });
      }
      await expect(read(1_000_000_000)).resolves.toMatchObject({ items: [], offset: 1_000_000_000 });
    }
    await expect(app.delay.list(INVOICE, { limit: 1001 })).rejects.toThrow('Invalid page: limit must be a whole number from 1 to 1000, got 1001');
    expect((await app.delay.list(INVOICE)).items.map((action) => action.key)).toEqual(['inv-1']);
  });
});
