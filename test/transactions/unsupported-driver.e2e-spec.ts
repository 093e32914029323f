import {
  DelayError,
  DelayModule,
  DelayService,
  InvalidDelayOptionsError,
  InvalidScheduleOptionsError,
  TransactionNotSupportedError,
  UnknownTransactionError,
  WriteOptions,
} from 'nestjs-delay';
import { DriverFixture, RedisFixture, WheelFixture } from '../conformance/support/driver-fixture';
import { TestRedisServer } from '../support/redis-server';
import { Test } from '@nestjs/testing';

const TOPIC = 'order.unpaid';
const KEY = 'o-1';

/** Something that looks like an open `pg` client: what a caller in a transaction would pass. */
const pgLikeClient = { query: async () => ({ rows: [] }), release: () => undefined };

/**
 * A transaction handed to a driver that cannot join it must never be
 * ignored: the write would survive the caller's rollback. Every write that
 * takes one refuses it with TransactionNotSupportedError, before writing.
 */
describe.each([new WheelFixture(), new RedisFixture()] as DriverFixture[])('a transaction on the $name driver', (fx) => {
  let delay: DelayService;

  beforeAll(() => fx.start(), 60_000);
  afterAll(() => fx.stop());
  beforeEach(async () => {
    ({ delay } = await fx.boot());
    await delay.schedule(TOPIC, KEY, { delay: '30m', payload: { total: 10 } });
  });
  afterEach(() => fx.shutdown());

  const refusals: Array<[string, (transaction: unknown) => Promise<unknown>]> = [
    ['schedule', (transaction) => delay.schedule(TOPIC, KEY, { delay: '1m', payload: { total: 99 }, transaction })],
    ['scheduleMany', (transaction) => delay.scheduleMany(TOPIC, [{ key: KEY, delay: '1m' }, { key: 'o-2', delay: '1m' }], { transaction })],
    ['reschedule', (transaction) => delay.reschedule(TOPIC, KEY, { delay: '1m', transaction })],
    ['cancel', (transaction) => delay.cancel(TOPIC, KEY, { transaction })],
    ['collect', (transaction) => delay.collect(TOPIC, 'batch-1', { n: 1 }, { window: '1m', transaction })],
  ];

  it.each(refusals)('%s refuses it with TransactionNotSupportedError and writes nothing', async (_name, call) => {
    const before = await delay.get(TOPIC, KEY);
    const refused = call(pgLikeClient);
    await expect(refused).rejects.toBeInstanceOf(TransactionNotSupportedError);
    await expect(refused).rejects.toBeInstanceOf(DelayError);
    await expect(refused).rejects.toMatchObject({ code: 'ERR_DELAY_TRANSACTION_NOT_SUPPORTED', message: expect.stringContaining(fx.name.split(/[ ,-]/)[0]) });
    expect(await delay.get(TOPIC, KEY)).toEqual(before);
    expect(await delay.count(TOPIC)).toBe(1);
    expect(await delay.get(TOPIC, 'batch-1')).toBeNull();
  });

  it('every recurring write refuses it with TransactionNotSupportedError and changes nothing', async () => {
    const DIGEST = 'merchant.digest';
    await delay.upsertRecurring(DIGEST, 'm-1', { every: '1h', payload: { n: 1 } });
    const before = await delay.getRecurring(DIGEST, 'm-1');
    const calls: Array<(transaction: unknown) => Promise<unknown>> = [
      (transaction) => delay.upsertRecurring(DIGEST, 'm-1', { every: '2h', payload: { n: 2 }, transaction }),
      (transaction) => delay.upsertRecurring(DIGEST, 'm-2', { every: '2h', transaction }),
      (transaction) => delay.pauseRecurring(DIGEST, 'm-1', { transaction }),
      (transaction) => delay.runRecurringNow(DIGEST, 'm-1', { transaction }),
      (transaction) => delay.removeRecurring(DIGEST, 'm-1', { transaction }),
    ];
    for (const call of calls) await expect(call(pgLikeClient)).rejects.toMatchObject({ code: 'ERR_DELAY_TRANSACTION_NOT_SUPPORTED' });
    await delay.pauseRecurring(DIGEST, 'm-1');
    await expect(delay.resumeRecurring(DIGEST, 'm-1', { transaction: pgLikeClient })).rejects.toBeInstanceOf(TransactionNotSupportedError);
    expect(await delay.getRecurring(DIGEST, 'm-1')).toEqual({ ...before, paused: true, nextRunAt: null });
    expect(await delay.getRecurring(DIGEST, 'm-2')).toBeNull();
    expect(await delay.listRecurring(DIGEST)).toHaveLength(1);
    expect(await delay.removeRecurring(DIGEST, 'm-1', { transaction: null })).toBe(true);
  });

  it('null and undefined mean "no transaction": the write happens on its own', async () => {
    await delay.schedule(TOPIC, 'o-3', { delay: '1m', transaction: null });
    expect(await delay.cancel(TOPIC, 'o-3', { transaction: undefined })).toBe(true);
    expect(await delay.cancel(TOPIC, KEY, {})).toBe(true);
  });

  it('a scheduleMany entry carrying its own transaction is refused (it belongs to the call)', async () => {
    const entries = [{ key: 'o-9', delay: '1m', transaction: pgLikeClient }] as unknown as Parameters<DelayService['scheduleMany']>[1];
    await expect(delay.scheduleMany(TOPIC, entries)).rejects.toBeInstanceOf(InvalidScheduleOptionsError);
    expect(await delay.get(TOPIC, 'o-9')).toBeNull();
  });

  it('write options that are not an object are refused', async () => {
    await expect(delay.cancel(TOPIC, KEY, 'tx' as unknown as WriteOptions)).rejects.toBeInstanceOf(InvalidScheduleOptionsError);
    expect(await delay.count(TOPIC)).toBe(1);
  });
});

describe('transaction options at bootstrap', () => {
  let redis: TestRedisServer;
  beforeAll(async () => {
    redis = await TestRedisServer.start();
  });
  afterAll(() => redis.stop());

  async function boot(options: Parameters<typeof DelayModule.forRoot>[0]): Promise<unknown> {
    const moduleRef = await Test.createTestingModule({ imports: [DelayModule.forRoot(options)] }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    try {
      await app.init();
    } finally {
      await app.close();
    }
    return undefined;
  }

  it('an ambient transaction with the wheel driver fails bootstrap, naming the driver', async () => {
    const booting = boot({ transactions: { ambient: () => undefined } });
    await expect(booting).rejects.toBeInstanceOf(InvalidDelayOptionsError);
    await expect(booting).rejects.toThrow(/transactions\.ambient needs a driver that joins transactions \(postgres\); the "wheel" driver cannot/);
  });

  it('an ambient transaction with the Redis driver fails bootstrap', async () => {
    const booting = boot({ driver: { type: 'redis', url: redis.url }, transactions: { ambient: () => undefined } });
    await expect(booting).rejects.toThrow(/the "redis" driver cannot/);
  });

  it('adapters of the wrong shape are listed, each with its index', async () => {
    const booting = boot({ driver: { type: 'redis', url: redis.url }, transactions: { adapters: [{ name: 'x' }, 'y'] as never } });
    await expect(booting).rejects.toThrow(/transactions\.adapters\[0\] must have a name, matches\(transaction\) and query/);
    await expect(booting).rejects.toThrow(/transactions\.adapters\[1\]/);
  });
});

describe('a driver that supports transactions, given an object no adapter knows', () => {
  it('refuses it with UnknownTransactionError, naming the known adapters', async () => {
    const { WheelDriver } = await import('nestjs-delay');
    const driver = Object.assign(new WheelDriver(), { supportsTransactions: true, name: 'txwheel' });
    const moduleRef = await Test.createTestingModule({
      imports: [
        DelayModule.forRoot({
          driver,
          transactions: { adapters: [{ name: 'mine', matches: (tx: unknown): tx is object => tx === 'mine', query: async () => [] }] },
        }),
      ],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    try {
      const delay = app.get(DelayService);
      const refused = delay.schedule(TOPIC, KEY, { delay: '1m', transaction: new (class Unknown {})() });
      await expect(refused).rejects.toBeInstanceOf(UnknownTransactionError);
      await expect(refused).rejects.toThrow(/an instance of Unknown .*known: mine/);
      expect(await delay.get(TOPIC, KEY)).toBeNull();
    } finally {
      await app.close();
    }
  });
});
