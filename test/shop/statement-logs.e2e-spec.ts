import { Controller, Get, Logger, LoggerService, Query } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { bootShop, BootedShop } from './shop-test-app';

/** What the shop's logger got, one line per call, every argument (an Error with its own properties) as the console would show it. */
class CapturingLogger implements LoggerService {
  readonly lines: string[] = [];
  log(...parts: unknown[]): void {
    this.add(parts);
  }
  error(...parts: unknown[]): void {
    this.add(parts);
  }
  warn(...parts: unknown[]): void {
    this.add(parts);
  }
  debug(...parts: unknown[]): void {
    this.add(parts);
  }
  verbose(...parts: unknown[]): void {
    this.add(parts);
  }
  private add(parts: unknown[]): void {
    this.lines.push(parts.map((part) => (part instanceof Error ? `${part.stack ?? part.message} ${JSON.stringify({ ...part })}` : String(part))).join(' '));
  }
}

/** Runs, through the shop's own connection, statements that fail with the request's value as a parameter. */
@Controller('statement-probe')
class StatementProbeController {
  constructor(private readonly database: DataSource) {}

  @Get('cast')
  cast(@Query('value') value: string): Promise<unknown> {
    // invalid input syntax for type integer: "<value>" (SQLSTATE 22P02): PostgreSQL's message itself quotes the value.
    return this.database.query('SELECT $1::integer AS n', [value]);
  }

  @Get('duplicate')
  duplicate(@Query('value') value: string): Promise<unknown> {
    // A merchant that exists (SQLSTATE 23505): the name is a parameter, the key is in the error's detail.
    return this.database.query('INSERT INTO merchants (id, name) VALUES ($1, $2)', ['leafy', value]);
  }
}

/**
 * A statement of the shop that fails is logged with its error and its
 * SQLSTATE, never with its parameters (payloads, names, addresses), and
 * the client gets a plain 500.
 */
describe('Shop statement logs (e2e)', () => {
  let shop: BootedShop | undefined;
  const logger = new CapturingLogger();

  afterEach(async () => {
    await shop?.app.close();
    shop = undefined;
    Logger.overrideLogger(false);
  });

  it.each([
    ['cast', '22P02', 'invalid input syntax for type integer'],
    ['duplicate', '23505', 'duplicate key value violates unique constraint "merchants_pkey"'],
  ])('logs the %s failure with its SQLSTATE and message, not the payload', async (probe, sqlstate, message) => {
    shop = await bootShop({ controllers: [StatementProbeController] });
    Logger.overrideLogger(logger);
    logger.lines.length = 0;
    const payload = `card-4111-1111-1111-1111-${probe}`;
    const { body } = await shop.http.get(`/statement-probe/${probe}`).query({ value: payload }).expect(500);
    expect(body).toEqual({ statusCode: 500, message: 'Internal server error' });
    const logged = logger.lines.join('\n');
    expect(logged).toContain(`SQLSTATE ${sqlstate}`);
    expect(logged).toContain(message);
    expect(logged).not.toContain(payload);
    // Nor the key of the row it collided with (the error's detail).
    expect(logged).not.toContain('(id)=(leafy)');
  });
});
