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
      topic text COLLATE "C" NOT NULL, member text COLLATE "C" NOT NULL, due_at bigint NOT NULL, payload text,
      PRIMARY KEY (topic, member))`);
    await pool.query(`CREATE INDEX IF NOT EXISTS actions_due ON ${SCHEMAS.bare}.actions (topic, due_at, member)`);
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

  async reset(admin: PoolClient): Promise<void> {
    await admin.query(`TRUNCATE ${SCHEMAS.bare}.actions`);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
