import { Logger } from '@nestjs/common';
import { describeError } from '../../utils/describe-error';
import { PostgresConnection } from './postgres-connection';
import { int } from './postgres-rows';

/** How often a consuming instance looks at the dead rows of the driver's tables. */
const CHECK_EVERY_MS = 1_000;
/** A table is vacuumed once it holds this many dead rows (and this instance's role owns it, or on PostgreSQL 17+ holds MAINTAIN on it). */
const VACUUM_MIN_DEAD_ROWS = 1_000;
/**
 * A table is vacuumed again no sooner than this many times as long as its last vacuum took: one instance's vacuums of
 * a table use at most a twentieth of one server process, however large it is.
 */
const SPACING = 20;
/**
 * A vacuum that did not remove at least half of the table's dead rows (another vacuum had it, so this one skipped it;
 * or a transaction left open keeps them) is not tried again for 5 s, doubling while that lasts, up to a minute.
 */
const INEFFECTIVE_WAIT_MS = 5_000;
const INEFFECTIVE_WAIT_MAX_MS = 60_000;
/** A vacuum that failed (cut by commandTimeout, refused) is left to autovacuum this long. */
const FAILED_WAIT_MS = 600_000;

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
 * VACUUM_MIN_DEAD_ROWS that its role owns (or, on PostgreSQL 17+, holds
 * MAINTAIN on) and no vacuum is working on, with
 * SKIP_LOCKED: a table another vacuum took meanwhile is skipped, nothing
 * waits. A plain VACUUM takes no lock that stops reads or writes. Off with
 * the driver's `vacuum: false`.
 *
 * Shutdown does not wait for a vacuum to end: `stop` cancels the one in
 * flight (pg_cancel_backend on the process that runs it, which the driver's
 * role may signal) and waits only for that. Behind a transaction pooler the
 * process of a connection is not known: there the vacuum runs on to its end
 * on the server, and shutdown stops waiting for it after commandTimeout.
 */
export class PostgresVacuum {
  private readonly logger = new Logger(PostgresVacuum.name);
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Local ms before which a table is not vacuumed again (see SPACING). */
  private readonly notBefore = new Map<string, number>();
  /** Vacuums of a table in a row that removed less than half of its dead rows (see INEFFECTIVE_WAIT_MS). */
  private readonly ineffective = new Map<string, number>();
  private warned = false;
  /** The check under way, if any. */
  private checking: Promise<void> | undefined;
  /** The server process running this instance's VACUUM, while it runs. */
  private vacuumPid: number | undefined;
  /** The cancel `stop` sent for it: its connection is not given back before this settles. */
  private cancelling: Promise<void> | undefined;

  constructor(
    private readonly connection: PostgresConnection,
    private readonly schema: string,
    /** The statement that lists the schema's tables to vacuum ($1 the least dead rows): rows of table_name, dead. */
    private readonly candidatesSql: string,
    /** Whether each statement of a connection runs on the same server process (no transaction pooler): then `stop` cancels a vacuum. */
    private readonly canCancel: boolean,
  ) {}

  /** Once: an instance that stopped does not start again. */
  start(): void {
    this.arm();
  }

  /** Stops the checks and cancels a vacuum in flight; settles once the check under way has ended (each statement is bounded by commandTimeout). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const pid = this.vacuumPid;
    // Only known where it can be cancelled (canCancel).
    if (pid !== undefined && !this.cancelling) {
      this.cancelling = this.connection.query('SELECT pg_catalog.pg_cancel_backend($1::pg_catalog.int4)', [pid]).then(
        () => undefined,
        (error: unknown) => this.logger.debug(`Could not cancel the vacuum in flight (${describeError(error)}); shutdown stops waiting for it after commandTimeout`),
      );
    }
    await this.checking;
  }

  private arm(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.checking = this.check().finally(() => {
        this.checking = undefined;
        this.arm();
      });
    }, CHECK_EVERY_MS);
    this.timer.unref();
  }

  private async check(): Promise<void> {
    let tables: Array<{ name: string; dead: number }>;
    try {
      tables = await this.candidates();
    } catch (error) {
      this.fail('look at the dead rows of its tables', error);
      return;
    }
    for (const table of tables) {
      if (this.stopped) return;
      // The name comes from the schema's own function, which lists only the driver's tables by their fixed names.
      if (!/^[a-z_]+$/.test(table.name) || (this.notBefore.get(table.name) ?? 0) > Date.now()) continue;
      const startedAt = Date.now();
      let left: boolean;
      let tookMs: number;
      try {
        if (!(await this.vacuum(table.name))) return;
        tookMs = Date.now() - startedAt;
        if (this.stopped) return;
        // A vacuum reports its table's dead rows as it ends (rows deleted meanwhile count too, on a busy table).
        const after = (await this.candidates(0)).find((row) => row.name === table.name)?.dead ?? 0;
        left = after >= VACUUM_MIN_DEAD_ROWS && after > table.dead / 2;
      } catch (error) {
        if (!this.stopped) this.fail(`vacuum ${this.schema}.${table.name}`, error);
        this.notBefore.set(table.name, Date.now() + FAILED_WAIT_MS);
        continue;
      }
      if (left) {
        const misses = (this.ineffective.get(table.name) ?? 0) + 1;
        this.ineffective.set(table.name, misses);
        this.notBefore.set(table.name, Date.now() + Math.min(INEFFECTIVE_WAIT_MAX_MS, INEFFECTIVE_WAIT_MS * 2 ** (misses - 1)));
        this.logger.debug(`Vacuum of ${this.schema}.${table.name} removed less than half of its dead rows (another vacuum had it, or an open transaction keeps them); next try in a while`);
      } else {
        this.ineffective.delete(table.name);
        this.notBefore.set(table.name, Date.now() + SPACING * Math.max(1, tookMs));
        this.logger.debug(`Vacuumed ${this.schema}.${table.name} (${table.dead} dead rows) in ${tookMs} ms`);
      }
    }
  }

  /**
   * VACUUM of one table on a connection held for it, its server process known while it runs (for `stop` to cancel).
   * False when stopped first. The connection goes back to the pool only once a cancel sent for it has been answered:
   * never could a late cancel reach the next statement that connection serves.
   */
  private vacuum(table: string): Promise<boolean> {
    return this.connection.withClient(async (client) => {
      const rows = this.canCancel ? (await client.query('SELECT pg_catalog.pg_backend_pid() AS pid')).rows : [];
      if (this.stopped) return false;
      this.vacuumPid = rows.length > 0 ? int(rows[0].pid) : undefined;
      try {
        await client.query(`VACUUM (SKIP_LOCKED) ${this.schema}.${table}`);
        return true;
      } finally {
        this.vacuumPid = undefined;
        await this.cancelling;
      }
    });
  }

  private async candidates(minDead = VACUUM_MIN_DEAD_ROWS): Promise<Array<{ name: string; dead: number }>> {
    const rows = await this.connection.query(this.candidatesSql, [minDead]);
    return rows.map((row) => ({ name: String(row.table_name), dead: int(row.dead) }));
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
