import { once } from 'node:events';
import { createConnection } from 'node:net';
import { DELAY_DRIVER, DelayService } from 'nestjs-delay';
import { RedisDriver } from '../../libs/delay/src/drivers/redis/redis.driver';
import { RedisConnection } from '../../libs/delay/src/drivers/redis/redis-connection';
import { MAX_READ_VIEWS, RedisTopicLayouts } from '../../libs/delay/src/drivers/redis/redis-topic-layouts';
import { sleep } from '../conformance/support/driver-fixture';
import { Probe, TOPIC } from '../conformance/support/probe';
import { redisAppSuite } from './support/redis-app-suite';

/**
 * Commands clients sent over `ms` (MONITOR: the commands a script runs inside
 * Redis are not counted, each script call is one), leaving out the test's own.
 * MONITOR is read on a plain socket: ioredis 5 can mistake a monitored line
 * arriving as it sets the mode up for the reply to a command of its own.
 */
async function idleCommands(url: string, ms: number): Promise<number> {
  const { hostname, port } = new URL(url);
  const socket = createConnection({ host: hostname, port: Number(port) });
  await once(socket, 'connect');
  let sent = 0;
  let pending = '';
  let started = false;
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    const lines = (pending + chunk).split('\r\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      // "+OK" first, then one "+<time> [<db> <source>] <command...>" line per command.
      if (!started) started = line === '+OK';
      else if (!/^\+\S+ \[\d+ lua\]/.test(line)) sent += 1;
    }
  });
  socket.write('MONITOR\r\n');
  await sleep(ms);
  socket.destroy();
  if (!started) throw new Error('MONITOR did not start');
  return sent;
}

const READS = 2_000;
const WAKE_CHECK_MS = 1_000;
/** A few check periods, and a bit so that each periodic task runs as often in both measures. */
const IDLE_MS = 3 * WAKE_CHECK_MS + 500;
/** Each periodic task (epoch check, wake-up PING, layout refresh, a consumer's safety re-check) may fall once more in one window than in the other. */
const PHASE_SLACK = 12;

/**
 * Reading a topic (count, list, isPaused...) must leave nothing behind: no
 * view refreshed on every check, and no memory that grows with the number
 * of topics ever read.
 */
describe('Redis driver: topics that are only read', () => {
  const suite = redisAppSuite();

  it('adds no idle Redis call after 2,000 distinct unknown topics were read', async () => {
    const app = await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix: 'reads', wakeCheck: '1s' }, shutdownTimeout: '1s' }, [Probe]);
    const delay = app.get(DelayService);
    await delay.schedule(TOPIC.basic, 'later', { delay: '1h' });
    await sleep(200);
    const before = await idleCommands(suite.url(), IDLE_MS);

    for (let n = 0; n < READS; n += 100) {
      await Promise.all(Array.from({ length: 100 }, (_, i) => delay.count(`unknown.${n + i}`)));
    }
    await delay.list('unknown.listed', { limit: 10 });
    await delay.listDead('unknown.dead', { limit: 10 });
    await delay.isPaused('unknown.paused');
    await delay.get('unknown.got', 'k');
    const after = await idleCommands(suite.url(), IDLE_MS);

    // The instance's own periodic calls are seen (the count is real), and reading 2,000 topics added none.
    expect(before).toBeGreaterThan(0);
    expect(after).toBeLessThanOrEqual(before + PHASE_SLACK);
    // Reads of the topics the instance schedules into still work, and the topic it armed is still kept.
    expect(await delay.count(TOPIC.basic)).toBe(1);
    const driver = app.get<RedisDriver>(DELAY_DRIVER);
    expect(driver.knownTopics.read).toBeLessThanOrEqual(MAX_READ_VIEWS);
  }, 30_000);

  it('holds at most MAX_READ_VIEWS views of topics only read, and reloads one after a check period', async () => {
    const connection = new RedisConnection({ url: suite.url() }, { commandTimeoutMs: 2_000, replicas: 0, replicasTimeoutMs: 0 });
    await connection.connect();
    const layouts = new RedisTopicLayouts(
      connection,
      'views',
      () => 1,
      10_000,
      200,
      () => undefined,
    );
    try {
      await layouts.load('armed', true);
      for (let n = 0; n < READS; n++) await layouts.load(`read.${n}`);
      expect(layouts.size).toEqual({ announced: 1, read: MAX_READ_VIEWS });
      // The most recent reads are still held; the first ones were dropped.
      expect(layouts.view(`read.${READS - 1}`)).toBeDefined();
      expect(layouts.view('read.0')).toBeUndefined();
      // A view only read is used for one check period, then loaded again (so it sees a new shard count).
      await sleep(300);
      expect(layouts.view(`read.${READS - 1}`)).toBeUndefined();
      expect(layouts.view('armed')).toBeDefined();
      // Arming a topic that was only read makes it kept, and it leaves the read views.
      await layouts.load(`read.${READS - 2}`);
      await layouts.load(`read.${READS - 2}`, true);
      expect(layouts.size.announced).toBe(2);
      expect(layouts.writable(`read.${READS - 2}`)).toBeDefined();
    } finally {
      layouts.stop();
      await connection.close();
    }
  }, 30_000);
});
