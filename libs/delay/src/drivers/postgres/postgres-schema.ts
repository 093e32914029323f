import { Logger } from '@nestjs/common';
import { DriverUnavailableError } from '../../errors/driver-unavailable.error';
import { PostgresConnection } from './postgres-connection';
import { latestPostgresMigration, postgresMigrations } from './postgres-migrations';

/** Both halves of the advisory lock key: a constant of this library's, and the schema's hash. */
const LOCK_CLASS = 0x6e_64_6c_79; // 'ndly'

/**
 * Brings the driver's schema to the latest version at startup, or checks it
 * is there (`migrate: false`). Migrations run in one transaction under a
 * transaction-level advisory lock: instances starting together apply them
 * once, the lock ends with the transaction (so it also works through a
 * pooler in transaction mode), and a failure leaves nothing half-applied.
 */
export class PostgresSchema {
  private readonly logger = new Logger(PostgresSchema.name);

  constructor(
    private readonly connection: PostgresConnection,
    private readonly schema: string,
  ) {}

  async migrate(): Promise<void> {
    const applied = await this.connection.withClient(async (client) => {
      await client.query('BEGIN');
      try {
        await client.query('SELECT pg_advisory_xact_lock($1::integer, hashtext($2::text))', [LOCK_CLASS, this.schema]);
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
    const { rows } = await run(`SELECT to_regclass('${this.schema}.migrations') IS NOT NULL AS present`);
    if (rows[0]?.present !== true) return 0;
    const versions = await run(`SELECT coalesce(max(version), 0)::integer AS version FROM ${this.schema}.migrations`);
    return Number(versions.rows[0]?.version ?? 0);
  }
}
