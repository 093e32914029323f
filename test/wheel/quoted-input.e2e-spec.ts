import { INestApplication, Injectable, LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DelayContext, DelayError, DelayModule, DelayService, OnDelayExpired, VirtualClock } from 'nestjs-delay';
import { resolveDelayOptions } from '../../libs/delay/src/delay.module-definition';

const TOPIC = 'quoted.topic';
/** A key that, logged raw, would end the line and forge another one, coloured. */
const FORGING_KEY = 'order-1\n[Nest] 1  - 01/01/2030, 00:00:00   ERROR [Auth] admin logged in\u001b[31m';
const HUGE = 'x'.repeat(100_000);
/** What an echoed input may add to a message: the cut input (100 characters) and a note of its length. */
const MAX_MESSAGE = 400;

@Injectable()
class Failing {
  @OnDelayExpired(TOPIC, { attempts: 2, backoff: '1s' })
  run(context: DelayContext): void {
    throw new Error(`nope (${context.attempt})`);
  }
}

/** Every line the app logs, whatever the level. */
class Lines implements LoggerService {
  readonly lines: string[] = [];
  log(message: unknown): void {
    this.lines.push(String(message));
  }
  error(message: unknown): void {
    this.lines.push(String(message));
  }
  warn(message: unknown): void {
    this.lines.push(String(message));
  }
  debug(message: unknown): void {
    this.lines.push(String(message));
  }
  verbose(message: unknown): void {
    this.lines.push(String(message));
  }
}

/** The message of what `call` throws (synchronously or not). */
async function messageOf(call: () => unknown): Promise<string> {
  try {
    await call();
  } catch (error) {
    expect(error).toBeInstanceOf(DelayError);
    return (error as Error).message;
  }
  throw new Error('expected a DelayError');
}

describe('keys, topics and other input in logs and error messages', () => {
  const apps: INestApplication[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });

  async function boot(clock: VirtualClock, logger: Lines): Promise<INestApplication> {
    const moduleRef = await Test.createTestingModule({ imports: [DelayModule.forRoot({ clock, driver: { type: 'wheel', tickMs: 1 } })], providers: [Failing] })
      .setLogger(logger)
      .compile();
    const app = moduleRef.createNestApplication({ logger });
    apps.push(app);
    await app.init();
    return app;
  }

  it('logs a key quoted: a newline or an escape sequence in it cannot forge a log line', async () => {
    const clock = new VirtualClock();
    const logger = new Lines();
    const app = await boot(clock, logger);
    await app.get(DelayService).schedule(TOPIC, FORGING_KEY, { delay: '1s' });
    await clock.advance('1s');
    await clock.advance('1s');
    const about = logger.lines.filter((line) => line.includes('order-1'));
    // The retry warning and the dead-letter error both name the key.
    expect(about.length).toBeGreaterThanOrEqual(2);
    for (const line of about) {
      expect(line).not.toContain('\n');
      expect(line).not.toContain('\u001b');
      expect(line).toContain(JSON.stringify(FORGING_KEY));
    }
  });

  it('cuts echoed input in error messages: a 100,000-character duration, topic, key or option does not make a 100,000-character message', async () => {
    const clock = new VirtualClock();
    const app = await boot(clock, new Lines());
    const delay = app.get(DelayService);
    const messages = [
      await messageOf(() => delay.schedule(TOPIC, 'k', { delay: HUGE })),
      await messageOf(() => delay.schedule(HUGE, 'k', { delay: '1s' })),
      await messageOf(() => delay.schedule(TOPIC, HUGE, { delay: '1s' })),
      await messageOf(() => delay.schedule(TOPIC, 'k', { delay: '1s', ifExists: HUGE as 'keep' })),
      await messageOf(() => delay.schedule(TOPIC, 'k', { at: HUGE as unknown as number })),
      await messageOf(() => delay.list(TOPIC, { limit: HUGE as unknown as number })),
      await messageOf(() => delay.collect(TOPIC, 'k', 1, { window: '1s', maxItems: HUGE as unknown as number })),
      await messageOf(() => resolveDelayOptions({ shutdownTimeout: HUGE })),
      await messageOf(() => resolveDelayOptions({ maxPayloadBytes: HUGE as unknown as number })),
      await messageOf(() => resolveDelayOptions({ driver: { type: 'redis', prefix: HUGE } })),
      await messageOf(() => resolveDelayOptions({ driver: { type: 'redis', topicShards: { [HUGE]: 2 } } })),
    ];
    for (const message of messages) {
      expect(message.length).toBeLessThan(MAX_MESSAGE);
      expect(message).toContain('(100000 characters)');
    }
    // Nothing was written by the refused calls.
    expect(await delay.count(TOPIC)).toBe(0);
  });
});
