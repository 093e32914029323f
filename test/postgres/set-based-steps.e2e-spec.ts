import { Client } from 'pg';
import { postgresMigrations } from '../../libs/delay/src/drivers/postgres/postgres-migrations';
import { postgresStatements } from '../../libs/delay/src/drivers/postgres/postgres-statements';
import { TestPostgresServer } from '../support/postgres-server';

/**
 * Migration 7 steps the plain ticks of a claim together, set-based, and
 * leaves every other step to series_step; migration 8 decides their wake
 * without reading the topic's due order when one of them created an
 * occurrence whose instant has passed. Here the same call, on the same rows,
 * goes to a schema stopped at migration 6 (every step through series_step)
 * and to one at the latest migration: the rows each answers, the tables each
 * leaves and the notification must be the same, step by step, and the
 * latest must have made the plain steps without series_step.
 */

interface Step {
  key: string;
  expect: ['token' | 'payload' | 'absent', string | null];
  overlap: 'skip' | 'allow' | 'cancelPrevious' | 'bufferOne';
  next: ['at' | 'delay' | 'remove' | 'keep', number, string | null];
  occurrences: Array<[string, number, string]>;
  grace?: number;
  whileAlive?: ['at', number, string, string[]];
}

const T = 't';
const FAR = 9_000_000_000_000;
const occ = (series: string, name: string): string => `${series}\u001e${name}`;

/** The rows every case starts from: ticks 101.. running under one claim, occurrences alive or gone, series lists. */
function seed(s: string, base: number): string {
  const tick = (key: string, token: number, payload = `state-${key}`): string => `('${T}', '${key}', '${key}', ${token}, ${base - 1000}, '${payload}', true)`;
  const action = (member: string, token: number, due: number): string => `('${T}', E'${member.replace('\u001e', '\\x1e')}', E'${member.replace('\u001e', '\\x1e')}', ${token}, ${due}, '"x"', false)`;
  const list = (...members: string[]): string => `ARRAY[${members.map((m) => `E'${m.replace('\u001e', '\\x1e')}'`).join(', ')}]::text[]`;
  return `
    SELECT setval('${s}.tokens', 1000);
    INSERT INTO ${s}.actions (topic, member, key, token, due_at, payload, tick) VALUES
      ${['a', 'b', 'c', 'd', 'e', 'g', 'h', 'i', 'k', 'l', 'm', 'n'].map((key, n) => tick(key, 101 + n)).join(',\n      ')},
      ${tick('f', 150)},
      ${action(occ('b', '1'), 200, base + 50)},
      ${action(occ('c', '0'), 201, base + 60)},
      ${action(occ('h', '0'), 202, base - 500)},
      ${action(occ('k', '0'), 203, base + 70)},
      ${action(occ('l', '0'), 204, base + 80)};
    -- The ticks' claim (ticks: true) and another claim running h's occurrence.
    INSERT INTO ${s}.runs (topic, claim_id, lease_until, members, tokens, last_due, last_member, ticks) VALUES
      ('${T}', 'ticks', ${FAR}, ARRAY['a','b','c','d','e','g','h','i','k','l','m','n'], ARRAY[101,102,103,104,105,106,107,108,109,110,111,112]::bigint[], ${base - 1000}, 'n', true),
      ('${T}', 'work', ${FAR}, ${list(occ('h', '0'))}, ARRAY[202]::bigint[], ${base - 500}, E'${occ('h', '0').replace('\u001e', '\\x1e')}', false);
    INSERT INTO ${s}.series (topic, key, occurrences) VALUES
      ('${T}', 'a', '{}'), ('${T}', 'b', '{}'), ('${T}', 'c', ${list(occ('c', '0'))}), ('${T}', 'd', ${list(occ('d', '0'))}),
      ('${T}', 'h', ${list(occ('h', '0'))}), ('${T}', 'k', ${list(occ('k', '0'))}), ('${T}', 'l', ${list(occ('l', '0'))});
  `;
}

/** One call's steps, keys in code point order as the driver sends them: plain ones (a, b, d, m, n) and every other kind. */
function calls(base: number): Step[] {
  const at = (offset: number, payload: string): Step['next'] => ['at', base + offset, payload];
  return [
    { key: 'a', expect: ['token', '101'], overlap: 'skip', next: at(1000, 'a2'), occurrences: [[occ('a', '1'), base + 10, '"a1"']] },
    // Its occurrence's key is held by an action scheduled by hand: skipped, never written over.
    { key: 'b', expect: ['token', '102'], overlap: 'skip', next: at(1000, 'b2'), occurrences: [[occ('b', '1'), base + 20, '"b1"']] },
    // An occurrence still waiting: skip refuses (slow).
    { key: 'c', expect: ['token', '103'], overlap: 'skip', next: at(1000, 'c2'), occurrences: [[occ('c', '1'), base + 30, '"c1"']] },
    // Its list names an occurrence that has finished: nothing alive.
    { key: 'd', expect: ['token', '104'], overlap: 'bufferOne', next: at(1000, 'd2'), occurrences: [[occ('d', '1'), base + 40, '"d1"']], whileAlive: ['at', base + 500, 'd-held', []] },
    // Not this claim's token.
    { key: 'e', expect: ['token', '999'], overlap: 'skip', next: at(1000, 'e2'), occurrences: [[occ('e', '1'), base + 10, '"e1"']] },
    // Its token is in no runs row: not running.
    { key: 'f', expect: ['token', '150'], overlap: 'skip', next: at(1000, 'f2'), occurrences: [[occ('f', '1'), base + 10, '"f1"']] },
    // An orphan grace: the declaration mark is series_step's.
    { key: 'g', expect: ['token', '106'], overlap: 'skip', next: at(1000, 'g2'), occurrences: [[occ('g', '1'), base + 10, '"g1"']], grace: 60_000 },
    { key: 'h', expect: ['token', '107'], overlap: 'cancelPrevious', next: at(1000, 'h2'), occurrences: [[occ('h', '1'), base + 10, '"h1"']] },
    { key: 'i', expect: ['token', '108'], overlap: 'skip', next: ['remove', 0, null], occurrences: [] },
    { key: 'j', expect: ['absent', null], overlap: 'skip', next: at(2000, 'j1'), occurrences: [] },
    { key: 'k', expect: ['token', '109'], overlap: 'bufferOne', next: at(1000, 'k2'), occurrences: [[occ('k', '1'), base + 10, '"k1"']], whileAlive: ['at', base + 300, 'k-held', [occ('k', '1')]] },
    { key: 'l', expect: ['token', '110'], overlap: 'allow', next: at(1000, 'l2'), occurrences: [[occ('l', '1'), base + 10, '"l1"']] },
    // No series row yet; two occurrences.
    { key: 'm', expect: ['token', '111'], overlap: 'allow', next: at(1000, 'm2'), occurrences: [[occ('m', '1'), base + 11, '"m1"'], [occ('m', '2'), base + 12, '"m2"']] },
    { key: 'n', expect: ['token', '112'], overlap: 'skip', next: at(1000, 'n2'), occurrences: [[occ('n', '1'), base + 13, '"n1"']] },
  ];
}
const SLOW = ['c', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l'];
const LATEST = Math.max(...postgresMigrations('x').map(({ version }) => version));

function params(steps: Step[]): unknown[] {
  const occurrences = steps.flatMap((step) => step.occurrences);
  const skippedWhile = steps.flatMap((step) => step.whileAlive?.[3] ?? []);
  return [
    T,
    steps.map((step) => step.key),
    steps.map((step) => step.expect[0]),
    steps.map((step) => step.expect[1]),
    steps.map((step) => step.overlap),
    steps.map((step) => step.next[0]),
    steps.map((step) => step.next[1]),
    steps.map((step) => step.next[2]),
    steps.map((step) => step.occurrences.length),
    occurrences.map(([key]) => key),
    occurrences.map(() => true),
    occurrences.map(([, at]) => at),
    occurrences.map(([, , payload]) => payload),
    steps.map((step) => step.grace ?? 0),
    steps.map((step) => step.whileAlive?.[0] ?? null),
    steps.map((step) => step.whileAlive?.[1] ?? 0),
    steps.map((step) => step.whileAlive?.[2] ?? null),
    steps.map((step) => step.whileAlive?.[3].length ?? 0),
    skippedWhile,
  ];
}

interface Outcome {
  rows: Array<Record<string, unknown>>;
  tables: Record<string, Array<Record<string, unknown>>>;
  seriesSteps: number;
  /** Calls of earliest_waiting, the read of the topic's due order that decides a wake. */
  earliestReads: number;
  notified: boolean;
}

describe('postgres: the plain steps of claimed ticks, set-based (migrations 7 and 8), against series_step one by one (migration 6)', () => {
  let server: TestPostgresServer;
  let client: Client;

  beforeAll(async () => {
    server = await TestPostgresServer.start();
    client = new Client({ connectionString: server.url });
    await client.connect();
  }, 60_000);
  afterAll(async () => {
    await client.end();
    await server.dispose();
  });

  async function migrate(schema: string, upTo: number): Promise<void> {
    for (const migration of postgresMigrations(schema).filter(({ version }) => version <= upTo)) {
      await client.query(`BEGIN;\n${migration.sql}\nCOMMIT;`);
    }
  }

  async function run(schema: string, steps: Step[], base: number, seedSql: string): Promise<Outcome> {
    await client.query(seedSql);
    const listener = new Client({ connectionString: server.url });
    await listener.connect();
    let notified = false;
    listener.on('notification', () => (notified = true));
    await listener.query(`LISTEN ${schema}`);
    try {
      await client.query('BEGIN');
      await client.query(`SET LOCAL track_functions = 'all'`);
      const { rows } = await client.query(postgresStatements(schema).advanceSeriesSteps, params(steps));
      const calls = await client.query(
        `SELECT coalesce(sum(calls) FILTER (WHERE funcname = 'series_step'), 0)::int AS calls, coalesce(sum(calls) FILTER (WHERE funcname = 'earliest_waiting'), 0)::int AS reads
         FROM pg_stat_xact_user_functions WHERE schemaname = $1`,
        [schema],
      );
      await client.query('COMMIT');
      await new Promise((resolve) => setTimeout(resolve, 200)); // a notification arrives after the commit
      const read = async (sql: string): Promise<Array<Record<string, unknown>>> => (await client.query(sql)).rows as Array<Record<string, unknown>>;
      return {
        // now_ms is each call's own reading of the clock.
        rows: rows.map(({ now_ms: _now, ...row }) => row).sort((x, y) => Number(x.ord) - Number(y.ord)),
        tables: {
          // A token below 1000 is one the seed wrote; above, one the call took (the two calls take them in another order).
          actions: await read(`SELECT member, key, attempt, due_at, payload, batch, trace, tick, CASE WHEN token < 1000 THEN token::text ELSE 'new' END AS token
            FROM ${schema}.actions ORDER BY member COLLATE "C"`),
          series: await read(`SELECT key, occurrences FROM ${schema}.series ORDER BY key`),
          series_runs: await read(`SELECT key, outcome, occurrence, started_at, attempt FROM ${schema}.series_runs ORDER BY key`),
          series_marks: await read(`SELECT key, declared_until > ${base} AS marked FROM ${schema}.series_marks ORDER BY key`),
          runs: await read(`SELECT claim_id, members, tokens FROM ${schema}.runs ORDER BY claim_id`),
        },
        seriesSteps: Number(calls.rows[0].calls),
        earliestReads: Number(calls.rows[0].reads),
        notified,
      };
    } finally {
      await listener.end();
    }
  }

  it('every kind of step in one call: the same rows back and the same rows written; the plain ones without series_step', async () => {
    await migrate('steps_v6', 6);
    await migrate('steps_latest', LATEST);
    const base = Date.now() + 3_600_000;
    const steps = calls(base);
    const before = await run('steps_v6', steps, base, seed('steps_v6', base));
    const after = await run('steps_latest', steps, base, seed('steps_latest', base));

    expect(after.rows).toEqual(before.rows);
    expect(after.tables).toEqual(before.tables);
    expect(after.notified).toBe(before.notified);
    expect(before.seriesSteps).toBe(steps.length);
    expect(after.seriesSteps).toBe(SLOW.length);

    // What the plain steps did, spelled out (so the comparison above cannot pass on two wrong answers).
    const row = (key: string): Record<string, unknown> => after.rows[steps.findIndex((step) => step.key === key)];
    expect(row('a')).toMatchObject({ status: 1, created: [occ('a', '1')], skipped: [], cancelled: [], soonest: String(base + 10), blocker: null });
    expect(row('b')).toMatchObject({ status: 1, created: [], skipped: [occ('b', '1')], soonest: String(base + 1000) });
    expect(row('d')).toMatchObject({ status: 1, created: [occ('d', '1')] });
    expect(row('m')).toMatchObject({ status: 1, created: [occ('m', '1'), occ('m', '2')], soonest: String(base + 11) });
    expect(row('c')).toMatchObject({ status: 1, created: [], skipped: [occ('c', '1')], blocker: occ('c', '0'), blocker_state: 'waiting' });
    expect(row('e')).toMatchObject({ status: 0 });
    expect(row('f')).toMatchObject({ status: 0 });
    expect(row('h')).toMatchObject({ status: 1, cancelled: [occ('h', '0')] });
    const actions = new Map(after.tables.actions.map((action) => [String(action.member), action]));
    expect(actions.get('a')).toMatchObject({ token: 'new', due_at: String(base + 1000), payload: 'a2', attempt: 1, tick: true });
    expect(actions.get(occ('b', '1'))).toMatchObject({ token: '200', payload: '"x"' });
    expect(actions.get('e')).toMatchObject({ token: '105', payload: 'state-e' });
    const series = new Map(after.tables.series.map((entry) => [String(entry.key), entry.occurrences]));
    expect(series.get('a')).toEqual([occ('a', '1')]);
    expect(series.get('b')).toEqual([]);
    expect(series.get('d')).toEqual([occ('d', '1')]);
    expect(series.get('l')).toEqual([occ('l', '0'), occ('l', '1')]);
    expect(series.get('m')).toEqual([occ('m', '1'), occ('m', '2')]);
  });

  it('plain steps alone: the same rows, no series_step at all, and a notification exactly when one alone would send it', async () => {
    const base = Date.now() + 3_600_000;
    const plain = calls(base).filter((step) => !SLOW.includes(step.key));
    // The seed's earliest waiting action is f's tick (base - 1000, not running): occurrences due after it wake no one,
    // one due before it does.
    const dueAt = (at: number): Step[] => plain.map((step) => ({ ...step, occurrences: step.occurrences.map(([key, , payload]): [string, number, string] => [key, at, payload]) }));
    // An occurrence of an instant passed (an hour ago) wakes whatever is waiting: migration 8 decides so without
    // reading the due order, unless the topic is paused (then it reads it, as for the others: once, after the steps).
    const cases = [
      ['late', dueAt(base + 5_000), false, 1, false],
      ['early', dueAt(base - 2_000), true, 1, false],
      ['passed', dueAt(base - 7_200_000), true, 0, false],
      ['paused', dueAt(base - 7_200_000), true, 1, true],
    ] as const;
    for (const [name, steps, wakes, reads, paused] of cases) {
      await migrate(`${name}_v6`, 6);
      await migrate(`${name}_latest`, LATEST);
      const pause = (schema: string): string => (paused ? `INSERT INTO ${schema}.paused_topics (topic, paused_at) VALUES ('${T}', 0);` : '');
      const before = await run(`${name}_v6`, steps, base, seed(`${name}_v6`, base) + pause(`${name}_v6`));
      const after = await run(`${name}_latest`, steps, base, seed(`${name}_latest`, base) + pause(`${name}_latest`));
      expect(after.rows).toEqual(before.rows);
      expect(after.tables).toEqual(before.tables);
      expect([name, before.notified, after.notified]).toEqual([name, wakes, wakes]);
      expect(after.seriesSteps).toBe(0);
      expect([name, before.earliestReads > 0, after.earliestReads]).toEqual([name, true, reads]);
      expect(after.rows.map((row) => row.status)).toEqual(steps.map(() => 1));
    }
  });
});
