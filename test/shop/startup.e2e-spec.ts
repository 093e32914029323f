import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Order } from '../../apps/shop/src/orders/order';
import { freePort } from '../support/redis-server';
import { buildShop, failedStart, killShop, ShopProcess, spawnShop } from './shop-process';

/**
 * `npm start` with no DATABASE_URL: the built shop runs a PostgreSQL of its
 * own on a data folder (SHOP_DATA_DIR, here a temporary one) that outlives
 * it, whatever way it stops. And a DATABASE_URL that does not answer stops
 * the startup with one clear line.
 */
describe('Startup (e2e): the embedded PostgreSQL of `npm start`, and a database that cannot be reached', () => {
  let dir: string;
  const open = new Set<ShopProcess>();

  beforeAll(() => buildShop(), 180_000);

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'shop-data-'));
    // As root, the server runs as 'postgres', which must reach the folder.
    chmodSync(dir, 0o755);
  });

  afterEach(async () => {
    for (const shop of open) await killShop(shop);
    open.clear();
    // Whatever a test left running on the folder.
    const pid = postmasterPid();
    if (pid !== undefined && alive(pid)) process.kill(pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  // Two starts of the shop in one case, each bounded by 60 s (spawnShop).
  jest.setTimeout(150_000);

  async function start(): Promise<ShopProcess> {
    const shop = await spawnShop({ SHOP_DATA_DIR: dir, DELAY_DRIVER: 'wheel' });
    open.add(shop);
    return shop;
  }

  async function stop(shop: ShopProcess, signal: NodeJS.Signals): Promise<number | string> {
    open.delete(shop);
    return killShop(shop, signal);
  }

  function postmasterPid(): number | undefined {
    const file = join(dir, 'pgdata', 'postmaster.pid');
    return existsSync(file) ? Number(readFileSync(file, 'utf8').split('\n')[0]) : undefined;
  }

  function alive(pid: number): boolean {
    try {
      process.kill(pid, 0);
      return true;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'EPERM';
    }
  }

  async function placeOrder(shop: ShopProcess): Promise<Order> {
    const response = await fetch(`${shop.baseUrl}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ buyerId: 'ann', lines: [{ sku: 'teapot', quantity: 2 }] }),
    });
    expect(response.status).toBe(201);
    return (await response.json()) as Order;
  }

  async function get<T>(shop: ShopProcess, path: string): Promise<T> {
    const response = await fetch(`${shop.baseUrl}${path}`);
    expect(response.status).toBe(200);
    return (await response.json()) as T;
  }

  it('keeps orders and stock across a kill -9 of the shop, taking over the PostgreSQL it left running, and stops that server on a clean exit', async () => {
    const first = await start();
    const order = await placeOrder(first);
    const server = postmasterPid() as number;
    expect(alive(server)).toBe(true);

    await stop(first, 'SIGKILL');
    // Nobody stopped it: the killed shop's server still runs.
    expect(alive(server)).toBe(true);

    const second = await start();
    expect(second.output()).toContain(`Stopping the PostgreSQL (PID ${server}) left running`);
    expect(alive(server)).toBe(false);
    await expect(get<Order>(second, `/orders/${order.id}`)).resolves.toMatchObject({ id: order.id, status: 'created' });
    await expect(get<{ stock: number }>(second, '/products/teapot')).resolves.toMatchObject({ stock: 1 });

    const secondServer = postmasterPid() as number;
    // Ctrl-C: the shop closes, then stops its server, and exits 0.
    expect(await stop(second, 'SIGINT')).toBe(0);
    expect(second.output()).toContain('Embedded PostgreSQL stopped');
    expect(alive(secondServer)).toBe(false);
    expect(existsSync(join(dir, 'shop.pid'))).toBe(false);
  });

  it('starts again after the shop and its PostgreSQL were both killed, over the stale postmaster.pid', async () => {
    const first = await start();
    const order = await placeOrder(first);
    const server = postmasterPid() as number;
    // As a power cut would: the shop, the postmaster and its backends all at once.
    const backends = spawnSync('pgrep', ['-P', String(server)], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).map(Number);
    for (const pid of [server, ...backends]) process.kill(pid, 'SIGKILL');
    await stop(first, 'SIGKILL');
    expect(postmasterPid()).toBe(server);
    // Gone, as after a power cut: a busy machine takes a moment to tear the killed processes down (and their socket
    // on the server's port with them).
    for (const deadline = Date.now() + 10_000; [server, ...backends].some(alive) && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 20));
    expect([server, ...backends].filter(alive)).toEqual([]);

    const second = await start();
    await expect(get<Order>(second, `/orders/${order.id}`)).resolves.toMatchObject({ id: order.id, status: 'created' });
    expect(await stop(second, 'SIGTERM')).toBe(0);
  });

  it('refuses a second shop on the same data folder with a clear message and exit code 1, and the first one keeps serving', async () => {
    const first = await start();
    const order = await placeOrder(first);

    const second = await failedStart({ SHOP_DATA_DIR: dir, DELAY_DRIVER: 'wheel' });
    expect(second.code).toBe(1);
    expect(second.output).toContain(`The data folder ${dir} is in use by another shop (PID ${first.child.pid}): stop that one first`);

    await expect(get<Order>(first, `/orders/${order.id}`)).resolves.toMatchObject({ status: 'created' });
  });

  it('stops with exit code 1 and one clear line when DATABASE_URL does not answer', async () => {
    const port = await freePort();
    const failed = await failedStart({ DATABASE_URL: `postgres://shop:secret-password@127.0.0.1:${port}/shop`, DELAY_DRIVER: 'wheel' });
    expect(failed.code).toBe(1);
    expect(failed.output).toContain(`Cannot reach the shop's database at postgres://shop@127.0.0.1:${port}/shop: connect ECONNREFUSED`);
    // The password is not printed.
    expect(failed.output).not.toContain('secret-password');
  });
});
