// The producers the PostgreSQL bench times in its own process, each through
// its public API: nestjs-delay's DelayService (a Nest application context,
// consume: false), pg-boss (send / insert / upsert / cancel), graphile-worker
// (WorkerUtils addJob / addJobs / the remove_job SQL function), and bare SQL
// through pg as the floor. Every one has a pool of 10 connections (each
// system's default; the floor's set to match). nestjs-delay's producer has a
// commandTimeout of 30 s instead of 5 s: the bench loads 1000 actions per
// scheduleMany, which a busy disk can hold longer than 5 s.
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { makeWorkerUtils } from 'graphile-worker';
import type { WorkerUtils } from 'graphile-worker';
import { Pool } from 'pg';
import type { PoolClient } from 'pg';
import { PgBoss } from 'pg-boss';
import { DelayModule, DelayService } from 'nestjs-delay';
import { NAME, SCHEMAS } from './protocol';
import type { BenchPayload, PgContender } from './protocol';

export interface PgItem {
  readonly key: string;
  /** When it falls due, epoch ms on this machine's clock. */
  readonly atMs: number;
  readonly payload: BenchPayload;
}

export interface PgProducer {
  readonly kind: PgContender | 'bare';
  /** Schedule one action under its key. */
  one(item: PgItem): Promise<void>;
  /** Schedule many in one call (scheduleMany, insert, addJobs, a multi-row INSERT). */
  bulk(items: readonly PgItem[]): Promise<void>;
  /** Schedule again under a key that is pending: the new due time and payload replace the old. */
  replace(item: PgItem): Promise<void>;
  /** Cancel a pending action by its key. */
  cancel(key: string): Promise<void>;
  /** Removes every action or job: TRUNCATE of the tables that hold them. */
  reset(admin: PoolClient): Promise<void>;
  close(): Promise<void>;
}

export class DelayPgProducer implements PgProducer {
  readonly kind = 'delay';

  private constructor(
    private readonly app: INestApplicationContext,
    private readonly service: DelayService,
  ) {}

  static async create(url: string): Promise<DelayPgProducer> {
    @Module({ imports: [DelayModule.forRoot({ driver: { type: 'postgres', connectionString: url, schema: SCHEMAS.delay, commandTimeout: '30s' }, consume: false })] })
    class ProducerModule {}
    const app = await NestFactory.createApplicationContext(ProducerModule, { logger: ['error', 'warn'] });
    return new DelayPgProducer(app, app.get(DelayService));
  }

  async one({ key, atMs, payload }: PgItem): Promise<void> {
    await this.service.schedule(NAME, key, { at: atMs, payload });
  }

  async bulk(items: readonly PgItem[]): Promise<void> {
    await this.service.scheduleMany(
      NAME,
      items.map(({ key, atMs, payload }) => ({ key, at: atMs, payload })),
    );
  }

  /** schedule replaces a pending arming under the same key (the default). */
  async replace(item: PgItem): Promise<void> {
    await this.one(item);
  }

  async cancel(key: string): Promise<void> {
    await this.service.cancel(NAME, key);
  }

  async reset(admin: PoolClient): Promise<void> {
    await admin.query(`TRUNCATE ${SCHEMAS.delay}.actions, ${SCHEMAS.delay}.dead`);
  }

  async close(): Promise<void> {
    await this.app.close();
  }
}

/**
 * pg-boss on a 'standard' queue. Its jobs carry the key as singletonKey; replace
 * by key is `upsert` (updates the newest queued job with that singletonKey, or
 * inserts one). Cancel has no by-key form: it takes the job id, which the bench
 * keeps from send/insert (an application would have to store it), so the
 * figure leaves out any lookup of the id.
 */
export class PgBossProducer implements PgProducer {
  readonly kind = 'pgboss';
  private readonly ids = new Map<string, string>();

  private constructor(readonly boss: PgBoss) {}

  static async create(url: string): Promise<PgBossProducer> {
    const boss = new PgBoss({ connectionString: url, schema: SCHEMAS.pgboss });
    boss.on('error', (error: Error) => console.error(`pg-boss: ${error.message}`));
    await boss.start();
    await boss.createQueue(NAME);
    return new PgBossProducer(boss);
  }

  async one({ key, atMs, payload }: PgItem): Promise<void> {
    const id = await this.boss.send(NAME, payload, { startAfter: new Date(atMs), singletonKey: key });
    if (id !== null) this.ids.set(key, id);
  }

  async bulk(items: readonly PgItem[]): Promise<void> {
    const ids = await this.boss.insert(
      NAME,
      items.map(({ key, atMs, payload }) => ({ data: payload, startAfter: new Date(atMs), singletonKey: key })),
      { returnId: true },
    );
    if (ids !== null) for (let n = 0; n < ids.length; n++) this.ids.set(items[n].key, ids[n]);
  }

  async replace({ key, atMs, payload }: PgItem): Promise<void> {
    await this.boss.upsert(NAME, payload, { singletonKey: key, startAfter: new Date(atMs) });
  }

  async cancel(key: string): Promise<void> {
    const id = this.ids.get(key);
    if (id === undefined) throw new Error(`pg-boss: no job id kept for ${key}`);
    await this.boss.cancel(NAME, id);
  }

  async reset(admin: PoolClient): Promise<void> {
    this.ids.clear();
    await admin.query(`TRUNCATE ${SCHEMAS.pgboss}.job`);
  }

  async close(): Promise<void> {
    await this.boss.stop({ graceful: true, timeout: 5_000 });
  }
}

/** graphile-worker's WorkerUtils: addJob with a jobKey (jobKeyMode 'replace', its default), addJobs, and the remove_job(job_key) SQL function. */
export class GraphileProducer implements PgProducer {
  readonly kind = 'graphile';

  private constructor(private readonly utils: WorkerUtils) {}

  static async create(url: string): Promise<GraphileProducer> {
    const utils = await makeWorkerUtils({ connectionString: url, schema: SCHEMAS.graphile });
    await utils.migrate();
    return new GraphileProducer(utils);
  }

  async one({ key, atMs, payload }: PgItem): Promise<void> {
    await this.utils.addJob(NAME, payload, { runAt: new Date(atMs), jobKey: key });
  }

  async bulk(items: readonly PgItem[]): Promise<void> {
    await this.utils.addJobs(items.map(({ key, atMs, payload }) => ({ identifier: NAME, payload, runAt: new Date(atMs), jobKey: key })));
  }

  async replace(item: PgItem): Promise<void> {
    await this.one(item);
  }

  async cancel(key: string): Promise<void> {
    await this.utils.withPgClient((client) => client.query(`SELECT ${SCHEMAS.graphile}.remove_job($1)`, [key]));
  }

  async reset(admin: PoolClient): Promise<void> {
    await admin.query(`TRUNCATE ${SCHEMAS.graphile}._private_jobs, ${SCHEMAS.graphile}._private_job_queues CASCADE`);
  }

  async close(): Promise<void> {
    await this.utils.release();
  }
}

/** Rows of the same shape as nestjs-delay's (topic, key, due time, payload; its primary key and due index), written and taken by bare statements. */
export class BareProducer implements PgProducer {
  readonly kind = 'bare';

  private constructor(readonly pool: Pool) {}

  static async create(url: string): Promise<BareProducer> {
    const pool = new Pool({ connectionString: url, max: 10 });
    pool.on('error', () => undefined);
    await pool.query(`CREATE SCHEMA IF NOT EXISTS ${SCHEMAS.bare}`);
    await pool.query(`CREATE TABLE IF NOT EXISTS ${SCHEMAS.bare}.actions (
      topic text COLLATE "C" NOT NULL, member text COLLATE "C" NOT NULL, due_at bigint NOT NULL, payload text, lease_until bigint,
      PRIMARY KEY (topic, member))`);
    await pool.query(`CREATE INDEX IF NOT EXISTS actions_due ON ${SCHEMAS.bare}.actions (topic, due_at, member)`);
    await pool.query(`CREATE TABLE IF NOT EXISTS ${SCHEMAS.bare}.claims (
      topic text COLLATE "C" NOT NULL, claim_id text COLLATE "C" NOT NULL, lease_until bigint NOT NULL, members text[] NOT NULL, payloads text[] NOT NULL,
      PRIMARY KEY (topic, claim_id))`);
    await pool.query(`CREATE TABLE IF NOT EXISTS ${SCHEMAS.bare}.runs (
      topic text COLLATE "C" NOT NULL, claim_id text COLLATE "C" NOT NULL, lease_until bigint NOT NULL, members text[] NOT NULL,
      PRIMARY KEY (topic, claim_id))`);
    // The in-place claim: rows stay where they are, a claim records their members in one leased row. Claims of one topic
    // take turns (a transaction-level advisory lock, then a statement with a fresh snapshot): without that, a claim whose
    // snapshot predates another's commit would take the rows the other just recorded, as nothing on the rows changed.
    // The picked rows are still locked (no new version): a cancel or replace committed after the claim's snapshot makes
    // the lock see the newest version, so a claim never takes an arming already gone.
    await pool.query(`CREATE OR REPLACE FUNCTION ${SCHEMAS.bare}.claim_in_place(p_topic text, p_now bigint, p_limit integer, p_claim text, p_done_claim text, p_done text[])
      RETURNS SETOF text LANGUAGE plpgsql VOLATILE AS $fn$
      BEGIN
        DELETE FROM ${SCHEMAS.bare}.actions a WHERE a.topic = p_topic AND a.member = ANY (p_done);
        DELETE FROM ${SCHEMAS.bare}.runs r WHERE r.topic = p_topic AND r.claim_id = p_done_claim;
        PERFORM pg_advisory_xact_lock(hashtext(p_topic));
        RETURN QUERY WITH picked AS (
            SELECT w.member, w.payload FROM ${SCHEMAS.bare}.actions w
            WHERE w.topic = p_topic AND w.due_at <= p_now AND w.member NOT IN (SELECT unnest(r.members) FROM ${SCHEMAS.bare}.runs r WHERE r.topic = p_topic)
            ORDER BY w.due_at LIMIT p_limit FOR UPDATE OF w SKIP LOCKED),
          recorded AS (INSERT INTO ${SCHEMAS.bare}.runs (topic, claim_id, lease_until, members)
            SELECT p_topic, p_claim, p_now + 30000, array_agg(p.member) FROM picked p HAVING count(*) > 0)
          SELECT p.member FROM picked p;
      END
      $fn$`);
    return new BareProducer(pool);
  }

  async one({ key, atMs, payload }: PgItem): Promise<void> {
    await this.pool.query(`INSERT INTO ${SCHEMAS.bare}.actions (topic, member, due_at, payload) VALUES ($1, $2, $3, $4)`, [NAME, key, atMs, JSON.stringify(payload)]);
  }

  async bulk(items: readonly PgItem[]): Promise<void> {
    await this.pool.query(
      `INSERT INTO ${SCHEMAS.bare}.actions (topic, member, due_at, payload) SELECT $1, * FROM unnest($2::text[], $3::bigint[], $4::text[])`,
      [NAME, items.map((item) => item.key), items.map((item) => item.atMs), items.map((item) => JSON.stringify(item.payload))],
    );
  }

  async replace({ key, atMs, payload }: PgItem): Promise<void> {
    await this.pool.query(`UPDATE ${SCHEMAS.bare}.actions SET due_at = $3, payload = $4 WHERE topic = $1 AND member = $2`, [NAME, key, atMs, JSON.stringify(payload)]);
  }

  async cancel(key: string): Promise<void> {
    await this.pool.query(`DELETE FROM ${SCHEMAS.bare}.actions WHERE topic = $1 AND member = $2`, [NAME, key]);
  }

  /** Takes up to `limit` due rows in one statement: the least any claim of due actions must do. Returns how many. */
  async take(client: PoolClient, limit: number): Promise<number> {
    const result = await client.query(
      `DELETE FROM ${SCHEMAS.bare}.actions WHERE (topic, member) IN (
         SELECT topic, member FROM ${SCHEMAS.bare}.actions WHERE topic = $1 AND due_at <= $2 ORDER BY due_at LIMIT $3 FOR UPDATE SKIP LOCKED)
       RETURNING member, payload`,
      [NAME, Date.now(), limit],
    );
    return result.rowCount ?? 0;
  }

  /**
   * The least a claim that leases must do, in one statement per claim: lease up to `limit` due rows (a new row
   * version each, since the lease is a column of the row) and delete the rows `done` names, those its previous claim
   * leased, which are complete. Same table and indexes as `take`, the lease not indexed. Returns the rows leased.
   */
  async takeLeased(client: PoolClient, limit: number, done: readonly string[]): Promise<string[]> {
    const result = await client.query<{ member: string }>(
      `WITH done AS (DELETE FROM ${SCHEMAS.bare}.actions a WHERE a.topic = $1 AND a.member = ANY($4::text[]))
       UPDATE ${SCHEMAS.bare}.actions a SET lease_until = $2::bigint + 30000 WHERE (a.topic, a.member) IN (
         SELECT topic, member FROM ${SCHEMAS.bare}.actions WHERE topic = $1 AND due_at <= $2 AND lease_until IS NULL ORDER BY due_at LIMIT $3 FOR UPDATE SKIP LOCKED)
       RETURNING a.member, a.payload`,
      [NAME, Date.now(), limit, done],
    );
    return result.rows.map((row) => row.member);
  }

  /**
   * The least a claim with one lease per claim does: move up to `limit` due rows into one row of a claims table (the
   * rows deleted, their members and payloads kept as arrays under the claim's lease) and delete the claim row
   * `done` names, its previous claim, which is complete. Returns how many rows it moved.
   */
  async takeMoved(client: PoolClient, limit: number, claimId: string, done: string | null): Promise<number> {
    const result = await client.query<{ n: number }>(
      `WITH done AS (DELETE FROM ${SCHEMAS.bare}.claims c WHERE c.topic = $1 AND c.claim_id = $5::text),
       moved AS (DELETE FROM ${SCHEMAS.bare}.actions WHERE (topic, member) IN (
         SELECT topic, member FROM ${SCHEMAS.bare}.actions WHERE topic = $1 AND due_at <= $2 ORDER BY due_at LIMIT $3 FOR UPDATE SKIP LOCKED)
         RETURNING member, payload)
       INSERT INTO ${SCHEMAS.bare}.claims (topic, claim_id, lease_until, members, payloads)
       SELECT $1, $4::text, $2::bigint + 30000, array_agg(m.member), array_agg(m.payload) FROM moved m HAVING count(*) > 0
       RETURNING cardinality(members) AS n`,
      [NAME, Date.now(), limit, claimId, done],
    );
    return result.rows[0]?.n ?? 0;
  }

  /**
   * The least a claim with one lease per claim does when the rows stay in place: record up to `limit` due rows not
   * already recorded in one leased row of a runs table (nothing written to the rows themselves), claims of a topic
   * taking turns; and delete `done` (completed rows) and `doneClaim` (the previous claim's record). Returns the members.
   */
  async takeInPlace(client: PoolClient, limit: number, claimId: string, doneClaim: string | null, done: readonly string[]): Promise<string[]> {
    const result = await client.query<{ member: string }>(`SELECT m AS member FROM ${SCHEMAS.bare}.claim_in_place($1, $2, $3, $4, $5, $6) m`, [
      NAME,
      Date.now(),
      limit,
      claimId,
      doneClaim,
      done,
    ]);
    return result.rows.map((row) => row.member);
  }

  async reset(admin: PoolClient): Promise<void> {
    await admin.query(`TRUNCATE ${SCHEMAS.bare}.actions, ${SCHEMAS.bare}.claims, ${SCHEMAS.bare}.runs`);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
