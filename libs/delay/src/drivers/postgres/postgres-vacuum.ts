import { Logger } from '@nestjs/common';
import { describeError } from '../../utils/describe-error';
import { PostgresConnection } from './postgres-connection';
import { int } from './postgres-rows';

/** How often a consuming instance looks at the dead rows of the driver's tables. */
const CHECK_EVERY_MS = 1_000;
/** A table is vacuumed once it holds this many dead rows (and this instance's role owns it). */
export const VACUUM_MIN_DEAD_ROWS = 1_000;
/**
 * A table is vacuumed again no sooner than this many times as long as its last vacuum took (or failed after): the
 * vacuums of a table use at most a twentieth of one server process, however large it is.
 */
const SPACING = 20;

/**
 * Keeps the driver's busiest tables vacuumed. Every run deletes a row, every
 * claim writes and deletes one, every recurring step rewrites a few: the
 * dead rows they leave lie in the due order that every claim scans from the
 * topic's first row, until a vacuum removes them. PostgreSQL's autovacuum
 * visits a database at most once per `autovacuum_naptime` (a minute by
 * default), and in that minute a busy topic leaves hundreds of thousands;
 * at 10,000 recurring occurrences a second the claims then spent most of
 * their time stepping over them.
 *
 * So every second a consuming instance reads the tables' dead-row counts
 * (one statement) and vacuums each table of its schema over
 * VACUUM_MIN_DEAD_ROWS that its role owns, with SKIP_LOCKED: a table another
 * vacuum is working on (autovacuum, another instance) is skipped, nothing
 * waits. A plain VACUUM takes no lock that stops reads or writes. Off with
 * the driver's `vacuum: false`.
 */
export class PostgresVacuum {
  private readonly logger = new Logger(PostgresVacuum.name);
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Local ms before which a table is not vacuumed again (see SPACING). */
  private readonly notBefore = new Map<string, number>();
  private warned = false;

  constructor(
    private readonly connection: PostgresConnection,
    private readonly schema: string,
    /** The statement that lists the schema's tables to vacuum ($1 the least dead rows): rows of table_name, dead. */
    private readonly candidatesSql: string,
  ) {}

  start(): void {
    this.stopped = false;
    this.arm();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.check().finally(() => this.arm()), CHECK_EVERY_MS);
    this.timer.unref();
  }

  private async check(): Promise<void> {
    let tables: Array<{ name: string; dead: number }>;
    try {
      const rows = await this.connection.query(this.candidatesSql, [VACUUM_MIN_DEAD_ROWS]);
      tables = rows.map((row) => ({ name: String(row.table_name), dead: int(row.dead) }));
    } catch (error) {
      this.fail('look at the dead rows of its tables', error);
      return;
    }
    for (const table of tables) {
      if (this.stopped) return;
      // The name comes from the schema's own function, which lists only the driver's tables by their fixed names.
      if (!/^[a-z_]+$/.test(table.name) || (this.notBefore.get(table.name) ?? 0) > Date.now()) continue;
      const startedAt = Date.now();
      try {
        await this.connection.query(`VACUUM (SKIP_LOCKED) ${this.schema}.${table.name}`);
        this.logger.debug(`Vacuumed ${this.schema}.${table.name} (${table.dead} dead rows) in ${Date.now() - startedAt} ms`);
      } catch (error) {
        if (!this.stopped) this.fail(`vacuum ${this.schema}.${table.name}`, error);
      }
      this.notBefore.set(table.name, Date.now() + SPACING * Math.max(1, Date.now() - startedAt));
    }
  }

  /** Logged once as a warning (autovacuum still does the work), then at debug level. */
  private fail(what: string, error: unknown): void {
    if (this.stopped) return;
    const message = `Could not ${what} (${describeError(error)}); autovacuum still cleans them, less often (see the postgres driver's vacuum option)`;
    if (this.warned) {
      this.logger.debug(message);
      return;
    }
    this.warned = true;
    this.logger.warn(message);
  }
}
