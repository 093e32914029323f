import IORedis from 'ioredis';
import { FaultProxy } from '../support/fault-proxy';
import { TestRedisServer } from '../support/redis-server';
import { sleep, within } from './support/fault-app';

/** The fault proxy itself: each fault does what the fault tests rely on, seen from a plain client. */
describe('the fault proxy', () => {
  let redis: TestRedisServer;
  let proxy: FaultProxy;
  let direct: IORedis;
  const clients: IORedis[] = [];

  const client = (): IORedis => {
    // No retries and no queue: each fault shows as it happens.
    const c = new IORedis({ port: proxy.port, host: '127.0.0.1', maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false, lazyConnect: true, disconnectTimeout: 0 });
    c.on('error', () => undefined);
    clients.push(c);
    return c;
  };
  /** 'hangs' when nothing settles within `ms`. */
  const outcome = (promise: Promise<unknown>, ms = 400): Promise<unknown> =>
    within(promise, ms, 'the call').then(
      (value) => value,
      (error: Error) => (error.message.includes('did not settle') ? 'hangs' : 'fails'),
    );

  beforeAll(async () => {
    redis = await TestRedisServer.start();
    direct = new IORedis(redis.url);
  });
  afterAll(async () => {
    direct.disconnect();
    await redis.dispose();
  });
  beforeEach(async () => {
    proxy = await FaultProxy.start(redis.port);
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.disconnect();
    await proxy.close();
  });

  it('forwards commands and replies, pipelined or not, and counts connections', async () => {
    const c = client();
    await c.connect();
    const replies = await Promise.all(Array.from({ length: 50 }, (_, n) => c.set(`p${n}`, 'x'.repeat(n * 100))));
    expect(replies.every((reply) => reply === 'OK')).toBe(true);
    expect(await c.get('p49')).toBe('x'.repeat(4_900));
    expect({ accepted: proxy.accepted, open: proxy.open }).toEqual({ accepted: 1, open: 1 });
  });

  it('reset() ends every connection with an error', async () => {
    const c = client();
    await c.connect();
    const closed = new Promise<void>((resolve) => c.once('close', () => resolve()));
    expect(proxy.reset()).toBe(1);
    await within(closed, 2_000, 'the close');
    expect(proxy.open).toBe(0);
  });

  it('blackhole() swallows everything until heal(), which delivers what was held', async () => {
    const c = client();
    await c.connect();
    proxy.blackhole();
    const pending = c.set('held', '1');
    expect(await outcome(pending.then((value) => value))).toBe('hangs');
    expect(await direct.get('held')).toBeNull();
    proxy.heal();
    expect(await within(pending, 2_000, 'the held SET')).toBe('OK');
    expect(await direct.get('held')).toBe('1');
  });

  it('halfOpen() lets commands through but no reply back', async () => {
    const c = client();
    await c.connect();
    proxy.halfOpen();
    expect(await outcome(c.set('half', '1'))).toBe('hangs');
    expect(await direct.get('half')).toBe('1');
  });

  it('dropReplies() lets Redis run the command and resets before its reply arrives; onCommand before resets without running it', async () => {
    const c = client();
    await c.connect();
    const lost = proxy.dropReplies((words) => words[0] === 'set' && words[1] === 'ran', 1);
    expect(await outcome(c.set('ran', '1'), 2_000)).toBe('fails');
    expect(lost).toEqual(['after-reply']);
    expect(await direct.get('ran')).toBe('1');

    const d = client();
    await d.connect();
    const seen = proxy.onCommand((words) => words[0] === 'set' && words[1] === 'never', 'before');
    expect(await outcome(d.set('never', '1'), 2_000)).toBe('fails');
    expect(seen).toEqual(['before']);
    await sleep(50);
    expect(await direct.get('never')).toBeNull();
  });

  it('refuse() closes new connections at once; heal() lets them in again', async () => {
    proxy.refuse();
    expect(await outcome(client().connect(), 2_000)).toBe('fails');
    proxy.heal();
    const c = client();
    await c.connect();
    expect(await c.ping()).toBe('PONG');
  });

  it('tells subscriber connections apart', async () => {
    const subscriber = client();
    await subscriber.connect();
    await subscriber.subscribe('news');
    const c = client();
    await c.connect();
    await c.ping();
    expect({ open: proxy.open, subscribers: proxy.subscribers }).toEqual({ open: 2, subscribers: 1 });
    const heard: string[] = [];
    subscriber.on('message', (_channel: string, message: string) => heard.push(message));
    proxy.blackhole('subscribers');
    await direct.publish('news', 'lost');
    await sleep(100);
    expect({ heard, ping: await c.ping() }).toEqual({ heard: [], ping: 'PONG' });
  });
});
