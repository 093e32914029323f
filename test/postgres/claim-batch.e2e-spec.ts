// How many actions one claim of the postgres driver takes: `claimBatch`, by
// default 100, and 256 on a topic of recurring schedules (each of its ticks
// creates an occurrence, and claims of 100 left the occurrences of 10,000
// schedules a second behind their ticks). Read from the runs rows the claims
// write (one per claim, with the members it took) while every handler is
// still running, so no claim's actions finish before the next claim is made.
// Recurring ticks are claimed besides the slots: as many a claim as it can
// take occurrences (claimBatch, and no more than the topic's concurrency),
// at least 128 and at most 256.
import { PostgresDriver } from '../../libs/delay/src/drivers/postgres/postgres.driver';
import type { Delivery, DeliveryOutcome } from '../../libs/delay/src/interfaces/delay-driver.interface';
import { pollUntil } from '../conformance/support/driver-fixture';
import { TestPostgresServer } from '../support/postgres-server';

const TOPIC = 'pgbatch.t';
const DUE = 600;

describe('postgres: actions per claim', () => {
  let server: TestPostgresServer;
  let schemas = 0;
  let driver: PostgresDriver | undefined;
  let release: (() => void) | undefined;

  beforeAll(async () => {
    server = await TestPostgresServer.start();
  }, 60_000);
  afterAll(() => server.dispose());
  afterEach(async () => {
    release?.();
    // The held runs end now: their outcomes are recorded before the driver closes (and long before the server goes).
    await driver?.drain(10_000);
    await driver?.close();
    driver = undefined;
  });

  /**
   * Starts a consumer of TOPIC with `concurrency` slots (1,000 unless given) on DUE due actions (or DUE due recurring
   * ticks), and returns the size of each claim once all run, and the driver's schema.
   */
  async function claims(options: { recurring: boolean; claimBatch?: number; concurrency?: number; ticks?: boolean }): Promise<{ sizes: number[]; schema: string }> {
    const schema = `batch_${process.pid}_${++schemas}`;
    driver = new PostgresDriver({ type: 'postgres', connectionString: server.url, schema, ...(options.claimBatch === undefined ? {} : { claimBatch: options.claimBatch }) });
    await driver.connect();
    const keys = Array.from({ length: DUE }, (_, n) => `k${String(n).padStart(4, '0')}`);
    if (options.ticks === true) {
      const armed = await driver.advanceSeriesMany(
        TOPIC,
        keys.map((key) => ({ topic: TOPIC, key, expect: { absent: true }, overlap: 'allow', occurrences: [], next: { due: { delayMs: 0 }, payload: '"tick"' } })),
      );
      expect(armed.every((result) => result.applied)).toBe(true);
    } else {
      await driver.scheduleMany({ topic: TOPIC, entries: keys.map((key) => ({ key, due: { delayMs: 0 }, payload: undefined, ifExists: 'replace' as const })), maxPastMs: 60_000 });
    }
    const held = new Promise<DeliveryOutcome>((resolve) => (release = () => resolve({ kind: 'completed' })));
    const started: Delivery[] = [];
    await driver.start({
      topics: new Map([[TOPIC, options.concurrency ?? 1_000]]),
      handle: (delivery) => {
        started.push(delivery);
        return held;
      },
      isRecurringTopic: () => options.recurring,
    });
    await pollUntil(() => started.length === DUE, 'every action started', 10_000);
    const rows = await server.admin(`SELECT cardinality(members) AS n FROM ${schema}.runs WHERE topic = $1 ORDER BY n DESC`, [TOPIC], true);
    return { sizes: rows.map((row) => Number(row.n)), schema };
  }

  async function claimSizes(options: { recurring: boolean; claimBatch?: number; concurrency?: number; ticks?: boolean }): Promise<number[]> {
    return (await claims(options)).sizes;
  }

  it('100 a claim on a plain topic', async () => {
    expect(await claimSizes({ recurring: false })).toEqual([100, 100, 100, 100, 100, 100]);
  });

  it('256 a claim on a topic of recurring schedules', async () => {
    expect(await claimSizes({ recurring: true })).toEqual([256, 256, 88]);
  });

  it('claimBatch, when given, on either', async () => {
    expect(await claimSizes({ recurring: true, claimBatch: 150 })).toEqual([150, 150, 150, 150]);
  });

  it('a shutdown whose runs end during its drain deletes every claim they finish before close returns', async () => {
    const { schema } = await claims({ recurring: false });
    release?.();
    release = undefined;
    await driver?.drain(10_000);
    await driver?.close();
    driver = undefined;
    // The runs rows of the claims that finished during the drain: deleted, not left for their leases to run out.
    const left = await server.admin(`SELECT count(*)::integer AS n FROM ${schema}.runs`, [], true);
    expect(Number(left[0].n)).toBe(0);
    // And, as before the fix, every action ran and was recorded.
    const waiting = await server.admin(`SELECT count(*)::integer AS n FROM ${schema}.actions`, [], true);
    expect(Number(waiting[0].n)).toBe(0);
  });

  it('recurring ticks: 256 a claim with room for 256 occurrences', async () => {
    expect(await claimSizes({ recurring: true, ticks: true })).toEqual([256, 256, 88]);
  });

  it('recurring ticks: no more than claimBatch, when given', async () => {
    expect(await claimSizes({ recurring: true, ticks: true, claimBatch: 150 })).toEqual([150, 150, 150, 150]);
  });

  it('recurring ticks: 128 a claim when the concurrency leaves room for fewer occurrences', async () => {
    // The default concurrency of 10 takes 10 occurrences a claim: 256 ticks would step 256 schedules for them.
    expect(await claimSizes({ recurring: true, ticks: true, concurrency: 10 })).toEqual([128, 128, 128, 128, 88]);
  });
});
