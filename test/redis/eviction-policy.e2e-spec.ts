import { Injectable, INestApplication, LoggerService, OnModuleInit } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DelayEvent, DelayModule, DelayService } from 'nestjs-delay';
import { TestRedisServer } from '../support/redis-server';

/** Records every event from the start (it subscribes while the modules initialise, before the driver starts). */
@Injectable()
class EventLog implements OnModuleInit {
  readonly events: DelayEvent[] = [];

  constructor(private readonly delay: DelayService) {}

  onModuleInit(): void {
    this.delay.events$.subscribe((event) => this.events.push(event));
  }
}

/** Keeps the error lines the app logs. */
class ErrorLines implements LoggerService {
  readonly errors: string[] = [];
  log(): void {}
  warn(): void {}
  debug(): void {}
  verbose(): void {}
  error(message: unknown): void {
    this.errors.push(String(message));
  }
}

async function bootOn(server: TestRedisServer, logger: ErrorLines): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [DelayModule.forRoot({ driver: { type: 'redis', url: server.url, prefix: 'eviction' }, shutdownTimeout: '1s' })],
    providers: [EventLog],
  })
    .setLogger(logger)
    .compile();
  const app = moduleRef.createNestApplication({ logger });
  await app.init();
  return app;
}

/** A Redis that may evict keys would drop pending actions without a word: the driver says so at startup. */
describe('Redis driver: maxmemory-policy check at startup', () => {
  const servers: TestRedisServer[] = [];
  const apps: INestApplication[] = [];

  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
    for (const server of servers.splice(0)) await server.dispose();
  });

  async function boot(args: string[]): Promise<{ app: INestApplication; logger: ErrorLines }> {
    const server = await TestRedisServer.start({ args });
    servers.push(server);
    const logger = new ErrorLines();
    const app = await bootOn(server, logger);
    apps.push(app);
    return { app, logger };
  }

  it('names an evicting policy: an error log, a storeEvicting event and a health warning, all saying noeviction', async () => {
    const { app, logger } = await boot(['--maxmemory-policy', 'allkeys-lru']);
    const errors = logger.errors.filter((line) => line.includes('maxmemory-policy'));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain('"allkeys-lru"');
    expect(errors[0]).toContain('noeviction');

    const evicting = app.get(EventLog).events.filter((event) => event.type === 'storeEvicting');
    expect(evicting).toHaveLength(1);
    expect(evicting[0]).toMatchObject({ topic: '*', key: '' });
    expect(evicting[0].error).toContain('noeviction');

    const health = await app.get(DelayService).health();
    expect(health.up).toBe(true);
    expect(health.warnings).toHaveLength(1);
    expect(health.warnings?.[0]).toContain('noeviction');
    // It is a warning, not a failure: the driver works.
    await app.get(DelayService).schedule('eviction.topic', 'k', { delay: '1h' });
    expect(await app.get(DelayService).count('eviction.topic')).toBe(1);
  });

  it('says nothing under noeviction', async () => {
    const { app, logger } = await boot(['--maxmemory-policy', 'noeviction']);
    expect(logger.errors).toEqual([]);
    expect(app.get(EventLog).events.filter((event) => event.type === 'storeEvicting')).toEqual([]);
    expect((await app.get(DelayService).health()).warnings).toBeUndefined();
  });

  it('starts normally when CONFIG is disabled (the check is skipped)', async () => {
    const { app, logger } = await boot(['--maxmemory-policy', 'allkeys-lru', '--rename-command', 'CONFIG', '']);
    expect(logger.errors).toEqual([]);
    expect(app.get(EventLog).events.filter((event) => event.type === 'storeEvicting')).toEqual([]);
    const health = await app.get(DelayService).health();
    expect(health.up).toBe(true);
    expect(health.warnings).toBeUndefined();
    await app.get(DelayService).schedule('eviction.topic', 'k', { delay: '1h' });
    expect(await app.get(DelayService).count('eviction.topic')).toBe(1);
  });
});
