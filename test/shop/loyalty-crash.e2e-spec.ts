import { Client } from 'pg';
import { Order } from '../../apps/shop/src/orders/order';
import { ORDER_AUTO_RATE } from '../../apps/shop/src/orders/order-topics';
import { TestPostgresServer } from '../support/postgres-server';
import { injectCompletionFault } from './completion-faults';
import { buildShop, killShop, ShopProcess, spawnShop } from './shop-process';

/**
 * The built shop process on the postgres driver, killed with -9 in the
 * middle of a transactional `order.auto-rate` run: after the handler rated
 * the order and wrote the buyer's loyalty credit (a ledger row, no unique
 * key), while the run's completion, its last statement, stalls. Nothing of
 * the run may be left: the next process takes the action back when its
 * lease runs out (3 s here), runs it again, and the buyer is credited once.
 */
jest.setTimeout(150_000);

describe('Loyalty crash (e2e): kill -9 of the shop in the middle of a transactional auto-rating', () => {
  let postgres: TestPostgresServer;
  let running: ShopProcess | undefined;

  beforeAll(async () => {
    await buildShop();
    postgres = await TestPostgresServer.start();
  }, 180_000);

  afterAll(async () => {
    if (running) await killShop(running);
    await postgres?.dispose();
  });

  async function startShop(): Promise<ShopProcess> {
    running = await spawnShop({ DATABASE_URL: postgres.url, DELAY_DRIVER: 'postgres', AUTO_RATE_AFTER: '1s', DELAY_LEASE: '3s' });
    return running;
  }

  async function call<T>(shop: ShopProcess, method: string, path: string, body?: unknown): Promise<T> {
    const response = await fetch(`${shop.baseUrl}${path}`, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    expect(response.status).toBeLessThan(300);
    return (await response.json()) as T;
  }

  async function query<T extends Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
    const client = new Client({ connectionString: postgres.url });
    await client.connect();
    try {
      return (await client.query<T>(sql, params)).rows;
    } finally {
      await client.end();
    }
  }

  async function until(what: string, withinMs: number, check: () => Promise<boolean>): Promise<void> {
    const deadline = Date.now() + withinMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`${what}: not within ${withinMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  const ledgerOf = (orderId: string): Promise<Array<{ points: number }>> => query('SELECT points FROM loyalty_ledger WHERE order_id = $1', [orderId]);
  const statusOf = async (orderId: string): Promise<string | undefined> => (await query<{ status: string }>('SELECT status FROM orders WHERE id = $1', [orderId]))[0]?.status;

  it('leaves neither the rating nor the credit of the killed run, and the run after the restart credits once', async () => {
    const first = await startShop();
    // The completion of attempt 1 stalls for 4 s: every write of the handler is made, none committed.
    await injectCompletionFault(postgres.url, ORDER_AUTO_RATE, { kind: 'stall', seconds: 4 });
    const placed = await call<Order>(first, 'POST', '/orders', { buyerId: 'dora', lines: [{ sku: 'teapot', quantity: 1 }] });
    for (const step of ['pay', 'ship', 'deliver']) await call<Order>(first, 'POST', `/orders/${placed.id}/${step}`);

    await until('the auto-rating to reach its completion', 15_000, async () => (await query("SELECT 1 FROM pg_stat_activity WHERE wait_event = 'PgSleep'")).length > 0);
    // The handler's writes are made, in the run's transaction: visible to it alone.
    expect(await statusOf(placed.id)).toBe('delivered');
    await killShop(first);
    running = undefined;

    // The server ends the dead process's transaction (when the stall returns and the reply finds no client): rolled back.
    await until("the killed run's transaction to end", 15_000, async () => (await query("SELECT 1 FROM pg_stat_activity WHERE wait_event = 'PgSleep'")).length === 0);
    await until("the killed run's locks to be released", 15_000, async () => (await query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'")).length === 0);
    expect(await statusOf(placed.id)).toBe('delivered');
    expect(await ledgerOf(placed.id)).toEqual([]);

    const second = await startShop();
    // The claim of the dead process is taken back when its lease (DELAY_LEASE, 3 s here) runs out: attempt 2.
    await until('the order to be auto-rated after the restart', 60_000, async () => (await statusOf(placed.id)) === 'rated');
    const account = await call<{ balance: number; credits: unknown[] }>(second, 'GET', '/buyers/dora/loyalty');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await ledgerOf(placed.id)).toHaveLength(1);
    expect(account.credits).toHaveLength(1);
    expect(await query('SELECT attempt FROM nestjs_delay.actions WHERE topic = $1 AND key = $2', [ORDER_AUTO_RATE, placed.id])).toEqual([]);
    expect(await killShop(second, 'SIGTERM')).toBe(0);
    running = undefined;
  });
});
