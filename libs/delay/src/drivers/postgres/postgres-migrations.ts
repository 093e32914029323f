/**
 * The postgres driver's tables and functions, as versioned migrations. The
 * driver applies the missing ones at startup (PostgresSchema); a team whose
 * migrations run elsewhere takes the same SQL from `postgresMigrations` and
 * sets `migrate: false`. A released migration is never edited: a change is a
 * new version, appended.
 *
 * Times are epoch milliseconds (bigint) on the database's clock,
 * `clock_timestamp()`, never `now()`: `now()` is when the transaction
 * started, and a write inside a long transaction of the application's must
 * still see the time it is made. Keys compare in code point order
 * (COLLATE "C"), as on the other drivers.
 */

import { MIGRATION_1_SQL } from './migrations/v1-schema.sql';
import { MIGRATION_2_SQL } from './migrations/v2-buffer-one.sql';
import { MIGRATION_3_SQL } from './migrations/v3-series-lists.sql';
import { MIGRATION_4_SQL } from './migrations/v4-series-steps.sql';
import { MIGRATION_5_SQL } from './migrations/v5-set-based-schedule.sql';
import { MIGRATION_6_SQL } from './migrations/v6-claim-one-row.sql';
import { MIGRATION_7_SQL } from './migrations/v7-set-based-steps.sql';
import { MIGRATION_8_SQL } from './migrations/v8-vacuum.sql';
import { MIGRATION_9_SQL } from './migrations/v9-vacuum-maintain.sql';

/** The schema the driver uses when none is configured. */
export const POSTGRES_DEFAULT_SCHEMA = 'nestjs_delay';

/** A schema name the driver can write unquoted into every statement: lower case, so no quoting rule can surprise anyone. */
export const POSTGRES_SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/** SQLSTATE raised by the driver's guard when a write meant for a transaction would commit on its own. */
export const SQLSTATE_NOT_IN_TRANSACTION = 'NDTX1';
/** SQLSTATE raised by the same guard when the transaction is on another database than the driver's (another store id). */
export const SQLSTATE_OTHER_STORE = 'NDDB1';
/** SQLSTATE raised when a schedule meets a batch opened under one of its keys between its check and its write. */
export const SQLSTATE_KIND_CONFLICT = 'NDKC1';

export interface PostgresMigration {
  readonly version: number;
  readonly name: string;
  /** Statements to run in one transaction, in order; the last records the version in `<schema>.migrations`. */
  readonly sql: string;
}

/** The ordered migrations for `schema` (default 'nestjs_delay'). Run each once, in order, each in a transaction. */
export function postgresMigrations(schema: string = POSTGRES_DEFAULT_SCHEMA): PostgresMigration[] {
  if (typeof schema !== 'string' || !POSTGRES_SCHEMA_PATTERN.test(schema)) {
    throw new TypeError(`postgresMigrations: schema must be 1 to 63 of [a-z0-9_], starting with a letter or _, got ${JSON.stringify(schema)}`);
  }
  return MIGRATIONS.map(({ version, name, sql }) => ({
    version,
    name,
    // The path pinned first: nothing the migration names is looked up in a schema another role could write to, however it is applied.
    sql: `SET LOCAL search_path = pg_catalog, pg_temp;\n${sql.split('__schema__').join(schema)}\nINSERT INTO ${schema}.migrations (version, name) VALUES (${version}, '${name}');\n`,
  }));
}

/** The newest version: the driver refuses to start on a schema older than this with `migrate: false`. */
export function latestPostgresMigration(): number {
  return MIGRATIONS[MIGRATIONS.length - 1].version;
}

const MIGRATIONS: ReadonlyArray<PostgresMigration> = [
  { version: 1, name: 'actions, dead actions, paused topics', sql: MIGRATION_1_SQL },
  { version: 2, name: 'bufferOne holds one occurrence back, refusals name their blocker', sql: MIGRATION_2_SQL },
  { version: 3, name: 'recurring listings by key, bulk recurring writes', sql: MIGRATION_3_SQL },
  { version: 4, name: 'the steps of many recurring series in one statement', sql: MIGRATION_4_SQL },
  { version: 5, name: 'earliest waiting through the due index, set-based schedule', sql: MIGRATION_5_SQL },
  { version: 6, name: 'the claim answers in one row, its turn asked for without waiting first', sql: MIGRATION_6_SQL },
  { version: 7, name: 'the plain steps of claimed ticks made together, set-based', sql: MIGRATION_7_SQL },
  { version: 8, name: 'the driver vacuums its busiest tables', sql: MIGRATION_8_SQL },
  { version: 9, name: 'tables the role holds MAINTAIN on are vacuumed too', sql: MIGRATION_9_SQL },
];
