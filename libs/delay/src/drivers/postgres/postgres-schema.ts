import { Logger } from '@nestjs/common';
import { DriverUnavailableError } from '../../errors/driver-unavailable.error';
import { PostgresConnection, sqlState } from './postgres-connection';
import { latestPostgresMigration, postgresMigrations } from './postgres-migrations';

/** SQLSTATEs of a CREATE ... IF NOT EXISTS that met the same CREATE of another session: the object is there now. */
const CREATED_MEANWHILE = new Set(['23505', '42P06', '42P07']);

/**
 * Brings the driver's schema to the latest version at startup, or checks it
 * is there (`migrate: false`). Migrations run in one transaction holding the
 * lock of the schema's own `migrations` table: instances starting together
 * apply them once, the lock ends with the transaction (so it also works
 * through a pooler in transaction mode), and a failure leaves nothing
 * half-applied. An advisory lock would do the same, but any role that can
 * connect may take one and hold every instance's startup; the table's lock
 * is only for roles with rights on it. A schema that exists already must
 * belong to the driver's role (or a role it is a member of): another role's
 * schema of that name is refused, not used.
 */
export class PostgresSchema {
  private readonly logger = new Logger(PostgresSchema.name);

  constructor(
    private readonly connection: PostgresConnection,
    private readonly schema: string,
  ) {}

  async migrate(): Promise<void> {
    await this.createLedger();
    const applied = await this.connection.withClient(async (client) => {
      await client.query('BEGIN');
      try {
        // Nothing the migrations name is looked up in a schema another role could write to.
        await client.query('SET LOCAL search_path = pg_catalog, pg_temp');
        await client.query(`LOCK TABLE ${this.schema}.migrations IN SHARE ROW EXCLUSIVE MODE`);
        const current = await this.version((sql) => client.query(sql));
        const pending = postgresMigrations(this.schema).filter((migration) => migration.version > current);
        for (const migration of pending) await client.query(migration.sql);
        await client.query('COMMIT');
        return pending.map((migration) => migration.version);
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    }, 6 * this.connection.commandTimeoutMs);
    if (applied.length > 0) this.logger.log(`Schema "${this.schema}": applied migration(s) ${applied.join(', ')}`);
  }

  /** The schema and its migrations table (the first statements of migration 1), created if missing, and checked to be the driver's. */
  private async createLedger(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.connection.withClient(async (client) => {
          await client.query('BEGIN');
          try {
            await client.query('SET LOCAL search_path = pg_catalog, pg_temp');
            // Created only when missing: CREATE SCHEMA needs CREATE on the database even when the schema exists.
            if (!(await this.checkOwner((sql, params) => client.query(sql, params)))) {
              await client.query(`CREATE SCHEMA IF NOT EXISTS ${this.schema}`);
              await this.checkOwner((sql, params) => client.query(sql, params));
            }
            await client.query(
              `CREATE TABLE IF NOT EXISTS ${this.schema}.migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp())`,
            );
            await client.query('COMMIT');
          } catch (error) {
            await client.query('ROLLBACK').catch(() => undefined);
            throw error;
          }
        });
        return;
      } catch (error) {
        // Another instance created them at the same moment: they are there now.
        if (attempt < 3 && CREATED_MEANWHILE.has(String(sqlState(error)))) continue;
        throw error;
      }
    }
  }

  /**
   * Whether the schema exists; refuses one of that name that belongs to a role the driver's role is not a member of:
   * its objects are another role's to change.
   */
  private async checkOwner(run: (sql: string, params: unknown[]) => Promise<{ rows: Array<Record<string, unknown>> }>): Promise<boolean> {
    const { rows } = await run(
      `SELECT pg_catalog.pg_get_userbyid(n.nspowner) AS owner, pg_catalog.pg_has_role(n.nspowner, 'USAGE') AS ours
       FROM pg_catalog.pg_namespace n WHERE n.nspname OPERATOR(pg_catalog.=) $1::pg_catalog.text`,
      [this.schema],
    );
    if (rows[0] !== undefined && rows[0].ours !== true) {
      throw new DriverUnavailableError(
        `schema "${this.schema}" belongs to role "${String(rows[0].owner)}", which the driver's role is not a member of: the driver will not use objects another role controls (create the schema as, or grant membership in, the role that migrates it)`,
      );
    }
    return rows[0] !== undefined;
  }

  /** `migrate: false`: the schema must be there, at the latest version. */
  async check(): Promise<void> {
    const current = await this.version(async (sql) => ({ rows: await this.connection.query(sql) }));
    const latest = latestPostgresMigration();
    if (current < latest) {
      throw new DriverUnavailableError(
        `schema "${this.schema}" is at version ${current}, this version of nestjs-delay needs ${latest}: apply postgresMigrations('${this.schema}') from version ${current + 1} on, or set migrate: true`,
      );
    }
  }

  private async version(run: (sql: string) => Promise<{ rows: Array<Record<string, unknown>> }>): Promise<number> {
    const { rows } = await run(`SELECT pg_catalog.to_regclass('${this.schema}.migrations'::pg_catalog.text) IS NOT NULL AS present`);
    if (rows[0]?.present !== true) return 0;
    const versions = await run(`SELECT coalesce(pg_catalog.max(version), 0)::pg_catalog.int4 AS version FROM ${this.schema}.migrations`);
    return Number(versions.rows[0]?.version ?? 0);
  }
}
