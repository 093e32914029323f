// The floor of the throughput phase on PostgreSQL: the least a durable
// recurring schedule must write per occurrence, in bare SQL through pg, with
// none of a library's bookkeeping. A schedule is one row (its key and next
// due time). Per batch of due schedules, two statements, each one commit:
//   - the step: moves each due schedule's next due time on by its interval
//     and creates its occurrence, leased to this process (the occurrence is
//     created once, with the step, and claimed by the same statement);
//   - the completion: deletes the occurrences that ran and records each
//     schedule's last run.
// That is four row writes per occurrence (the schedule's update, the
// occurrence's insert and delete, the last run's upsert), against the
// library's ticks, occurrences, runs rows, series state and last runs. What
// it leaves out, and a library cannot: leases that run out and are taken back
// (a crash), overlap and missed policies, pause, listing, a wake on changes,
// schedules with their own time zones or cron rules. Batches run on several
// connections at once, each waiting for its own step's occurrences to run.
import { Pool } from 'pg';

export interface FloorStarts {
  record(scheduledAt: number, now: number): void;
}

const SCHEMA = 'recurring_floor';
const EVERY_MS = 1000;
const BATCH = 500;
const LOOPS = 4;
const LEASE_MS = 5000;
/** How long a loop that found nothing due waits before it looks again (the floor has no wake). */
const IDLE_MS = 5;

export async function startPostgresFloor(
  url: string,
  schedules: number,
  starts: FloorStarts,
): Promise<{ create: () => Promise<number>; stop: () => Promise<void> }> {
  const pool = new Pool({ connectionString: url, max: LOOPS + 1 });
  await pool.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await pool.query(`CREATE SCHEMA ${SCHEMA}`);
  await pool.query(`CREATE TABLE ${SCHEMA}.schedules (key text COLLATE "C" PRIMARY KEY, due_at bigint NOT NULL, every_ms bigint NOT NULL)`);
  await pool.query(`CREATE INDEX schedules_due ON ${SCHEMA}.schedules (due_at)`);
  await pool.query(
    `CREATE TABLE ${SCHEMA}.occurrences (token bigserial PRIMARY KEY, key text COLLATE "C" NOT NULL, scheduled_at bigint NOT NULL, lease_until bigint NOT NULL)`,
  );
  await pool.query(`CREATE TABLE ${SCHEMA}.last_runs (key text COLLATE "C" PRIMARY KEY, scheduled_at bigint NOT NULL)`);
  let stopped = false;
  const loops: Array<Promise<void>> = [];

  const step = `
    WITH due AS (
      SELECT s.key, s.due_at FROM ${SCHEMA}.schedules s WHERE s.due_at <= $1::bigint
      ORDER BY s.due_at LIMIT $2::integer FOR UPDATE SKIP LOCKED),
    moved AS (
      UPDATE ${SCHEMA}.schedules s SET due_at = d.due_at + s.every_ms FROM due d WHERE s.key = d.key
      RETURNING d.key, d.due_at)
    INSERT INTO ${SCHEMA}.occurrences (key, scheduled_at, lease_until)
    SELECT m.key, m.due_at, $1::bigint + ${LEASE_MS} FROM moved m
    RETURNING token, key, scheduled_at`;
  const complete = `
    WITH done AS (DELETE FROM ${SCHEMA}.occurrences o WHERE o.token = ANY ($1::bigint[]) RETURNING o.key, o.scheduled_at)
    INSERT INTO ${SCHEMA}.last_runs (key, scheduled_at) SELECT d.key, d.scheduled_at FROM done d
    ON CONFLICT (key) DO UPDATE SET scheduled_at = excluded.scheduled_at`;

  const loop = async (): Promise<void> => {
    while (!stopped) {
      const { rows } = await pool.query<{ token: string; key: string; scheduled_at: string }>(step, [Date.now(), BATCH]);
      if (rows.length === 0) {
        await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
        continue;
      }
      const now = Date.now();
      for (const row of rows) starts.record(Number(row.scheduled_at), now);
      await pool.query(complete, [rows.map((row) => row.token)]);
    }
  };

  return {
    create: async () => {
      const started = performance.now();
      // Every schedule's first run at the next whole second, as `every: '1s'` schedules created now have.
      const first = Math.ceil(Date.now() / EVERY_MS) * EVERY_MS + EVERY_MS;
      for (let from = 0; from < schedules; from += 1000) {
        const keys = Array.from({ length: Math.min(1000, schedules - from) }, (_, n) => `u${from + n}`);
        await pool.query(`INSERT INTO ${SCHEMA}.schedules (key, due_at, every_ms) SELECT k, $2::bigint, ${EVERY_MS} FROM unnest($1::text[]) k`, [keys, first]);
      }
      for (let n = 0; n < LOOPS; n++) loops.push(loop());
      return (performance.now() - started) / 1000;
    },
    stop: async () => {
      stopped = true;
      await Promise.all(loops);
      await pool.end();
    },
  };
}
