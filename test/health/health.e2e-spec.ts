import { Controller, Get, Injectable, INestApplication, Module } from '@nestjs/common';
import { HealthCheck, HealthCheckResult, HealthCheckService } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import { DelayModule, DelayModuleOptions, DelayService, InvalidDelayOptionsError, OnDelayExpired } from 'nestjs-delay';
import { DelayHealthIndicator, DelayHealthModule } from 'nestjs-delay/health';
import request from 'supertest';
import { TestRedisServer } from '../support/redis-server';
import { TestPostgresServer } from '../support/postgres-server';

const TOPIC = 'order.unpaid';

/** A handler the test holds on a gate, so the next due action has to wait for the slot (lag). */
@Injectable()
class GatedHandler {
  private release: (() => void) | undefined;
  private gate: Promise<void> = Promise.resolve();
  runs = 0;

  hold(): void {
    this.gate = new Promise((resolve) => (this.release = resolve));
  }

  open(): void {
    this.release?.();
  }

  @OnDelayExpired(TOPIC, { concurrency: 1 })
  async cancelUnpaid(): Promise<void> {
    this.runs++;
    await this.gate;
  }
}

@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly delay: DelayHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check(): Promise<HealthCheckResult> {
    return this.health.check([() => this.delay.isHealthy('delay', { timeout: '500ms', maxLag: '200ms' })]);
  }
}

async function boot(options: DelayModuleOptions): Promise<INestApplication> {
  @Module({ imports: [DelayModule.forRoot(options), DelayHealthModule], controllers: [HealthController], providers: [GatedHandler] })
  class HealthTestModule {}
  const moduleRef = await Test.createTestingModule({ imports: [HealthTestModule] }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return app;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('health indicator on the wheel', () => {
  let app: INestApplication;

  beforeEach(async () => {
    app = await boot({ driver: { type: 'wheel', tickMs: 5 } });
  });

  afterEach(async () => {
    app.get(GatedHandler).open();
    await app.close();
  });

  it('is up with the driver, its round trip and each consumed topic', async () => {
    const { body } = await request(app.getHttpServer()).get('/health').expect(200);
    expect(body.status).toBe('ok');
    expect(body.info.delay).toEqual({
      status: 'up',
      driver: 'wheel',
      roundTripMs: 0,
      topics: { [TOPIC]: { consuming: true, consumerAlive: true, lagMs: 0, paused: false } },
    });
  });

  it("is down while a topic's lag is over its threshold, and up again once it drains", async () => {
    const handler = app.get(GatedHandler);
    const delay = app.get(DelayService);
    handler.hold();
    await delay.schedule(TOPIC, 'first', { delay: 0 });
    await delay.schedule(TOPIC, 'second', { delay: 0 });
    // The second waits for the only slot; its lag only grows while the first is held.
    await sleep(300);
    const down = await request(app.getHttpServer()).get('/health').expect(503);
    expect(down.body.error.delay.status).toBe('down');
    expect(down.body.error.delay.reason).toMatch(new RegExp(`^${TOPIC.replace('.', '\\.')}: lag \\d+ ms is over 200 ms$`));
    expect(down.body.error.delay.topics[TOPIC].lagMs).toBeGreaterThanOrEqual(300);

    handler.open();
    const deadline = Date.now() + 10_000;
    while (handler.runs < 2 && Date.now() < deadline) await sleep(10);
    await request(app.getHttpServer()).get('/health').expect(200);
  });

  it('refuses thresholds that are not durations', async () => {
    await expect(app.get(DelayHealthIndicator).isHealthy('delay', { maxLag: 'soon' })).rejects.toThrow(InvalidDelayOptionsError);
  });
});

describe('health indicator on Redis', () => {
  let redis: TestRedisServer;
  let app: INestApplication;

  beforeAll(async () => {
    redis = await TestRedisServer.start();
  });

  afterAll(async () => {
    await redis.dispose();
  });

  afterEach(async () => {
    await app?.close();
  });

  it('reports down within its timeout when Redis stops, and up again once it is back', async () => {
    app = await boot({ driver: { type: 'redis', url: redis.url, prefix: 'health' } });
    const http = request(app.getHttpServer());
    const up = await http.get('/health').expect(200);
    expect(up.body.info.delay).toMatchObject({ status: 'up', driver: 'redis', topics: { [TOPIC]: { consuming: true, consumerAlive: true } } });
    expect(typeof up.body.info.delay.roundTripMs).toBe('number');

    await redis.kill();
    const started = performance.now();
    const down = await http.get('/health').expect(503);
    const tookMs = performance.now() - started;
    expect(down.body.error.delay.status).toBe('down');
    // The check's own timeout is 500 ms; the bound is generous for a loaded machine, and far below a hang.
    expect(tookMs).toBeLessThan(3_000);

    await redis.boot();
    const deadline = Date.now() + 15_000;
    let status = 503;
    while (status !== 200 && Date.now() < deadline) {
      status = (await http.get('/health')).status;
      if (status !== 200) await sleep(100);
    }
    expect(status).toBe(200);
  });
});

describe('health indicator on PostgreSQL', () => {
  let postgres: TestPostgresServer;
  let app: INestApplication;

  beforeAll(async () => {
    postgres = await TestPostgresServer.start();
  }, 60_000);

  afterAll(async () => {
    await postgres.dispose();
  });

  afterEach(async () => {
    await app?.close();
  });

  it('reports down within its timeout while the server is frozen, and up again once it thaws', async () => {
    app = await boot({ driver: { type: 'postgres', connectionString: postgres.url, schema: 'health', commandTimeout: '1s', wakeCheck: '1s' } });
    const http = request(app.getHttpServer());
    const up = await http.get('/health').expect(200);
    expect(up.body.info.delay).toMatchObject({ status: 'up', driver: 'postgres', topics: { [TOPIC]: { consuming: true, consumerAlive: true } } });

    postgres.pause();
    try {
      const started = performance.now();
      const down = await http.get('/health').expect(503);
      expect(down.body.error.delay.status).toBe('down');
      expect(performance.now() - started).toBeLessThan(3_000);
    } finally {
      postgres.resume();
    }
    const deadline = Date.now() + 15_000;
    let status = 503;
    while (status !== 200 && Date.now() < deadline) {
      status = (await http.get('/health')).status;
      if (status !== 200) await sleep(100);
    }
    expect(status).toBe(200);
  });
});
