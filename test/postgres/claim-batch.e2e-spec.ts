// How many actions one claim of the postgres driver takes: `claimBatch`, by
// default 100, and 256 on a topic of recurring schedules (each of its ticks
// creates an occurrence, and claims of 100 left the occurrences of 10,000
// schedules a second behind their ticks). Read from the runs rows the claims
// write (one per claim, with the members it took) while every handler is
// still running, so no claim's actions finish before the next claim is made.
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
    await driver?.close();
    driver = undefined;
  });

  /** Starts a consumer of TOPIC with 1,000 slots on DUE due actions, and returns the size of each claim once all run. */
  async function claimSizes(options: { recurring: boolean; claimBatch?: number }): Promise<number[]> {
    const schema = `batch_${process.pid}_${++schemas}`;
    driver = new PostgresDriver({ type: 'postgres', connectionString: server.url, schema, ...(options.claimBatch === undefined ? {} : { claimBatch: options.claimBatch }) });
    await driver.connect();
    const keys = Array.from({ length: DUE }, (_, n) => `k${String(n).padStart(4, '0')}`);
    await driver.scheduleMany({ topic: TOPIC, entries: keys.map((key) => ({ key, due: { delayMs: 0 }, payload: undefined, ifExists: 'replace' as const })), maxPastMs: 60_000 });
    const held = new Promise<DeliveryOutcome>((resolve) => (release = () => resolve({ kind: 'completed' })));
    const started: Delivery[] = [];
    await driver.start({
      topics: new Map([[TOPIC, 1_000]]),
      handle: (delivery) => {
        started.push(delivery);
        return held;
      },
      isRecurringTopic: () => options.recurring,
    });
    await pollUntil(() => started.length === DUE, 'every action started', 10_000);
    const rows = await server.admin(`SELECT cardinality(members) AS n FROM ${schema}.runs WHERE topic = $1 ORDER BY n DESC`, [TOPIC], true);
    return rows.map((row) => Number(row.n));
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
});
