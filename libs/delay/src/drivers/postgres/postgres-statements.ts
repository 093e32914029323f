import { LISTED_BATCH_ITEMS } from '../../delay.constants';
/**
 * Every statement the postgres driver sends, for one schema. Each write is
 * one statement (a function of the schema's, or a statement with CTEs), so
 * it runs inside the application's transaction with no extra round trip and
 * no savepoint. Parameters are `$n`, always cast, so the same text runs with
 * bound parameters on the driver's pool and with literals in a transaction.
 */
export interface PostgresStatements {
  readonly channel: string;
  readonly schedule: string;
  readonly reschedule: string;
  readonly collect: string;
  readonly cancel: string;
  readonly cancelEach: string;
  readonly get: string;
  readonly getInTransaction: string;
  readonly storeId: string;
  readonly list: string;
  readonly count: string;
  readonly listDead: string;
  readonly countDead: string;
  readonly redrive: string;
  readonly claim: string;
  readonly recover: string;
  readonly finish: string;
  readonly complete: string;
  readonly retry: string;
  readonly bury: string;
  readonly extend: string;
  readonly release: string;
  readonly pause: string;
  readonly resume: string;
  readonly isPaused: string;
  readonly runNow: string;
  readonly topics: string;
  readonly topicHealth: string;
  readonly now: string;
  readonly advanceSeries: string;
  readonly completeOccurrences: string;
  readonly retryOccurrence: string;
  readonly buryOccurrence: string;
  readonly declareSeries: string;
  readonly lastSeriesRuns: string;
}

/** The columns of a claimed action, as the claim returns them. */
const CLAIMED_COLUMNS = 'a.member, a.key, a.token, a.attempt, a.due_at, a.payload, a.batch, a.items, a.trace, a.tick';

/** The columns a reader of actions needs: those, and its state, given whether it is running (its token in a runs row of the topic). */
function actionColumns(running: string): string {
  return `${CLAIMED_COLUMNS}, CASE WHEN ${running} THEN 'running' ELSE 'waiting' END AS state`;
}

// ---- Recurring: last runs ----
/**
 * A CTE, `ran`, that records the last run of the recurring series whose
 * occurrences `source` (a CTE of the same statement) names: rows of member,
 * attempt (the one that ended), started (the run's start, null unless the
 * member is an occurrence) and n (order: the latest wins when one statement
 * records two runs of one series). The series key is the member up to U+001E.
 * Only a series that still exists is recorded. Written into the statement that
 * records the outcome, so it costs no round trip.
 */
function recordSeriesRuns(s: string, source: string, outcome: string): string {
  return `ran AS (
        INSERT INTO ${s}.series_runs AS x (topic, key, outcome, occurrence, started_at, attempt, at)
        SELECT DISTINCT ON (k.key) $1::text, k.key, '${outcome}', k.member, k.started, k.attempt, ${s}.clock_ms(NULL)
        FROM (SELECT g.member, split_part(g.member, chr(30), 1) AS key, g.started, g.attempt, g.n FROM ${source} g WHERE g.started IS NOT NULL) k
        WHERE EXISTS (SELECT 1 FROM ${s}.series e WHERE e.topic = $1::text AND e.key = k.key)
        ORDER BY k.key, k.n DESC
        ON CONFLICT (topic, key) DO UPDATE SET outcome = excluded.outcome, occurrence = excluded.occurrence, started_at = excluded.started_at,
          attempt = excluded.attempt, at = excluded.at)`;
}
// ---- end last runs ----

/**
 * The addresses of the topic's ($1) runs rows named by `claimIds` that meet `condition` (on alias y), locked by
 * `lock`. Each claim is looked up through the primary key (the lateral subquery, kept apart by OFFSET 0): a runs
 * table holds few live rows, and claim_id = ANY (...) was planned as a read of every row of the topic, dead ones
 * included. (The claim function deletes its finished claims' rows one by one, for the same reason.)
 */
function runsRowsOf(s: string, claimIds: string, condition: string, lock: string): string {
  return `ARRAY(SELECT x.ctid FROM unnest(${claimIds}::text[]) AS c(id),
            LATERAL (SELECT y.ctid FROM ${s}.runs y WHERE y.topic = $1::text AND y.claim_id = c.id AND ${condition} OFFSET 0 ${lock}) x)`;
}

/**
 * An UPDATE (alias r) renewing the leases of the topic's ($1) claims named by `claimIds`, for `leaseMs` from now:
 * only leases still running, and never a runs row another transaction holds (a claim taking it back, as it expired).
 */
function renewLeases(s: string, claimIds: string, leaseMs: string): string {
  return `UPDATE ${s}.runs r SET lease_until = ${s}.clock_ms(NULL) + ${leaseMs}::bigint
        WHERE r.ctid = ANY (${runsRowsOf(s, claimIds, `y.lease_until > ${s}.clock_ms(NULL)`, 'FOR UPDATE SKIP LOCKED')})
          AND r.topic = $1::text`;
}

export function postgresStatements(schema: string): PostgresStatements {
  const s = schema;
  const paused = `EXISTS (SELECT 1 FROM ${s}.paused_topics p WHERE p.topic = $1::text)`;
  return {
    channel: s,
    // $1 topic, $2 keys, $3 absolute, $4 values, $5 payloads, $6 keep, $7 traces, $8 max past, $9 horizon, $10 the store's id in a transaction, else null (the guard: clock_ms)
    schedule: `SELECT status, due_at, payload, attempt, now_ms FROM ${s}.schedule($1::text, $2::text[], $3::boolean[], $4::bigint[], $5::text[], $6::boolean[], $7::text[], $8::bigint, $9::bigint, $10::text)`,
    reschedule: `SELECT status, due_at, payload, attempt, now_ms FROM ${s}.reschedule($1::text, $2::text, $3::boolean, $4::bigint, $5::bigint, $6::bigint, $7::text)`,
    collect: `SELECT status, size, due_at, now_ms FROM ${s}.collect($1::text, $2::text, $3::text, $4::bigint, $5::bigint, $6::boolean, $7::integer, $8::text, $9::text, $10::bigint)`,
    // The clock is read last, after the delete: its guard refuses (and so undoes) a delete that would commit on its own, or on another database.
    cancel: `WITH gone AS (DELETE FROM ${s}.actions a WHERE a.topic = $1::text AND (a.member = $2::text OR (a.key = $2::text AND a.cancel_by_key)) RETURNING 1)
      SELECT (SELECT count(*) FROM gone)::integer AS removed, ${s}.clock_ms($3::text) AS now_ms`,
    // Autocommit cancels of one tick, $2 the keys in call order: per call, how many rows it removed. A row goes to the
    // first call that reaches it, as when the calls run one after the other (a key given twice: the second finds nothing).
    cancelEach: `WITH k AS (SELECT u.key, u.n FROM unnest($2::text[]) WITH ORDINALITY AS u(key, n)),
      gone AS (DELETE FROM ${s}.actions a WHERE a.topic = $1::text AND (a.member = ANY($2::text[]) OR (a.key = ANY($2::text[]) AND a.cancel_by_key))
        RETURNING (SELECT min(k.n) FROM k WHERE a.member = k.key OR (a.key = k.key AND a.cancel_by_key)) AS n)
      SELECT (SELECT count(*) FROM gone g WHERE g.n = k.n)::integer AS removed FROM k ORDER BY k.n`,
    get: `SELECT ${actionColumns(`${s}.is_running(a.topic, a.token)`)}, ${paused} AS paused FROM ${s}.actions a WHERE a.topic = $1::text AND a.member = $2::text`,
    // The same in the application's transaction, $3 the store's id: one row always (member null when there is no
    // action), so the guard runs whether or not the key has one, and refuses a transaction over or on another database.
    getInTransaction: `SELECT ${actionColumns(`${s}.is_running(a.topic, a.token)`)}, ${paused} AS paused, g.guard
      FROM (SELECT ${s}.clock_ms($3::text) AS guard) g LEFT JOIN ${s}.actions a ON a.topic = $1::text AND a.member = $2::text`,
    // The id the store was given when its schema was made (the migrations' store table): the guard of each write in the
    // application's transaction compares it with its database's.
    storeId: `SELECT min(s.id) AS id FROM ${s}.store s`,
    // A listing shows a batch's first LISTED_BATCH_ITEMS items and its size, not the whole array.
    // Running actions first. The topic's running tokens are read once, not once per row.
    list: `WITH running AS MATERIALIZED (SELECT unnest(n.tokens) AS token FROM ${s}.runs n WHERE n.topic = $1::text)
      SELECT ${actionColumns('a.token IN (SELECT token FROM running)').replace('a.items', `a.items[1:${LISTED_BATCH_ITEMS}] AS items, cardinality(a.items) AS size`)}, ${paused} AS paused
      FROM ${s}.actions a WHERE a.topic = $1::text
      ORDER BY a.token NOT IN (SELECT token FROM running), a.due_at, a.member LIMIT $2::integer OFFSET $3::integer`,
    count: `SELECT count(*)::integer AS n FROM ${s}.actions a WHERE a.topic = $1::text`,
    listDead: `SELECT d.id, d.key, d.payload, d.batch, d.items, d.due_at, d.attempts, d.error, d.died_at FROM ${s}.dead d WHERE d.topic = $1::text
      ORDER BY d.died_at, d.id LIMIT $2::integer OFFSET $3::integer`,
    countDead: `SELECT count(*)::integer AS n FROM ${s}.dead d WHERE d.topic = $1::text`,
    redrive: `SELECT ${s}.redrive($1::text, $2::text) AS status`,
    // ---- the claim (the claim function in the migrations: steps, head, turns) ----
    // $1 topic, $2 limit, $3 lease ms, $4 claim id, $5 ticks besides the limit, $6 and $7 the resume point (below) or
    // nulls, $8 and $9 completions carried, $10 the ids of this consumer's claims that are over, $11 how long to wait
    // for the topic's turn (ms), $12 whether to look for expired leases to take back (it reads every runs row of the
    // topic: the consumer asks for it with every claim that starts at the topic's first row, at least once a second).
    // Recurring ticks ($5 at most, besides the limit) are taken apart from the handler slots: a tick is library
    // work of microseconds, so a topic whose slots are all busy with long handlers still advances its schedules
    // on time.
    // $6 and $7, the drain's resume point, or nulls: the due time and member of the last row (in claim order) the
    // consumer's previous (full) claim took. The claim then starts its scan past it instead of at the topic's first
    // entry (the member counts: a bulk of actions shares one due time), past the index entries
    // of every row completed before in the drain, which a long transaction elsewhere keeps from being cleaned
    // (each one costs a heap visit while any snapshot may still see it). Rows left behind (re-armed with an
    // earlier due time, held by another transaction, put back) are taken by a claim without it: the consumer
    // sends null when its last claim was not full, after a wake (a write made the topic's earliest due time
    // earlier, runs were handed back), after runs were revived, and at least once a second.
    claim: `SELECT * FROM ${s}.claim($1::text, $2::integer, $3::bigint, $4::text, $5::integer, $6::bigint, $7::text, $8::text[], $9::bigint[], $10::text[], $11::bigint, $12::boolean)`,
    // ---- end the claim ----
    // Claims whose reply was lost ($2, their ids), asked again: their leases renewed, the actions they took that still
    // hold their token handed back, same attempt.
    // A lease already expired is not renewed: the next claim takes those runs back (as the next attempt), and this
    // statement returns nothing of them. A row a claim is taking back (locked) is skipped, as it is expired.
    recover: `WITH renewed AS (${renewLeases(s, '$2', '$3')}
        RETURNING r.claim_id, r.members, r.tokens)
      SELECT n.claim_id, ${CLAIMED_COLUMNS}, ${s}.clock_ms(NULL) AS now_ms
      FROM renewed n, unnest(n.members, n.tokens) AS u(member, token), ${s}.actions a
      WHERE a.topic = $1::text AND a.member = u.member AND a.token = u.token`,
    // Runs rows of this consumer's claims that are over ($2: every outcome recorded).
    finish: `DELETE FROM ${s}.runs r WHERE r.ctid = ANY (${runsRowsOf(s, '$2', 'true', 'FOR UPDATE')}) AND r.topic = $1::text`,
    complete: `DELETE FROM ${s}.actions a USING unnest($2::text[], $3::bigint[]) AS r(member, token)
      WHERE a.topic = $1::text AND a.member = r.member AND a.token = r.token`,
    retry: `UPDATE ${s}.actions a SET token = nextval('${s}.tokens'), attempt = a.attempt + 1, due_at = ${s}.clock_ms(NULL) + $4::bigint
      WHERE a.topic = $1::text AND a.member = $2::text AND a.token = $3::bigint
      RETURNING a.due_at`,
    bury: `WITH clock AS MATERIALIZED (SELECT ${s}.clock_ms(NULL) AS now),
      gone AS (DELETE FROM ${s}.actions a WHERE a.topic = $1::text AND a.member = $2::text AND a.token = $3::bigint RETURNING a.*)
      INSERT INTO ${s}.dead AS d (topic, id, key, payload, batch, items, due_at, attempts, error, died_at)
      SELECT g.topic, g.member, g.key, g.payload, g.batch, g.items, g.due_at, g.attempt, $4::text, c.now FROM gone g, clock c
      ON CONFLICT (topic, id) DO UPDATE SET key = excluded.key, payload = excluded.payload, batch = excluded.batch, items = excluded.items,
        due_at = excluded.due_at, attempts = excluded.attempts, error = excluded.error, died_at = excluded.died_at
      RETURNING 1`,
    // ---- lease renewal, reporting runs whose arming is gone ----
    // $1 topic, $2 lease ms, $3 the claims whose runs are not over, $4 members, $5 tokens of the runs going on. Returns
    // the members whose row is gone or holds another token (cancelled, re-armed, taken back after the lease ran out);
    // the consumer tells those runs. A lease already expired is not renewed: its runs are the next claim's to take back
    // (a row such a claim holds is skipped, not waited for).
    extend: `WITH renewed AS (${renewLeases(s, '$3', '$2')}
        RETURNING 1)
      SELECT r.member FROM unnest($4::text[], $5::bigint[]) AS r(member, token)
      WHERE NOT EXISTS (SELECT 1 FROM ${s}.actions a WHERE a.topic = $1::text AND a.member = r.member AND a.token = r.token)`,
    // ---- end lease renewal ----
    // At shutdown: runs still going are handed back, same attempt, under a new token (not running: their runs rows
    // name the old one, and go when their lease runs out); every instance is told.
    release: `WITH back AS (
        UPDATE ${s}.actions a SET token = nextval('${s}.tokens')
        FROM unnest($2::text[], $3::bigint[]) AS r(member, token)
        WHERE a.topic = $1::text AND a.member = r.member AND a.token = r.token
        RETURNING a.due_at),
      woke AS (SELECT pg_notify('${s}', $1::text || ' ' || ${s}.clock_ms(NULL)) FROM (SELECT 1 FROM back LIMIT 1) b)
      SELECT (SELECT count(*) FROM back)::integer AS released, (SELECT count(*) FROM woke)::integer AS woke`,
    pause: `INSERT INTO ${s}.paused_topics (topic, paused_at) VALUES ($1::text, ${s}.clock_ms(NULL)) ON CONFLICT (topic) DO NOTHING RETURNING 1`,
    // Consumers asleep on a paused topic have no timer armed: "look now".
    resume: `WITH gone AS (DELETE FROM ${s}.paused_topics p WHERE p.topic = $1::text RETURNING 1),
      woke AS (SELECT pg_notify('${s}', $1::text || ' ' || ${s}.clock_ms(NULL)) FROM gone)
      SELECT (SELECT count(*) FROM gone)::integer AS resumed, (SELECT count(*) FROM woke)::integer AS woke`,
    isPaused: `SELECT ${paused} AS paused`,
    // Keeps the token and only moves a row earlier: a runs row's range (its last row) still covers a row a claim took
    // meanwhile.
    runNow: `WITH clock AS MATERIALIZED (SELECT ${s}.clock_ms(NULL) AS now),
      found AS (SELECT a.due_at FROM ${s}.actions a WHERE a.topic = $1::text AND a.member = $2::text AND NOT ${s}.is_running($1::text, a.token)),
      moved AS (UPDATE ${s}.actions a SET due_at = c.now FROM clock c
        WHERE a.topic = $1::text AND a.member = $2::text AND NOT ${s}.is_running($1::text, a.token) AND a.due_at > c.now RETURNING a.due_at),
      woke AS (SELECT pg_notify('${s}', $1::text || ' ' || m.due_at) FROM moved m)
      SELECT EXISTS (SELECT 1 FROM found) AS found, (SELECT count(*) FROM woke)::integer AS woke`,
    topics: `WITH t AS (SELECT topic FROM ${s}.actions UNION SELECT topic FROM ${s}.dead UNION SELECT topic FROM ${s}.paused_topics),
      r AS (SELECT a.topic, count(*)::integer AS running FROM ${s}.runs n, unnest(n.members, n.tokens) AS u(member, token), ${s}.actions a
            WHERE a.topic = n.topic AND a.member = u.member AND a.token = u.token GROUP BY a.topic),
      a AS (SELECT c.topic, (c.total - coalesce(r.running, 0))::integer AS waiting, coalesce(r.running, 0) AS running
            FROM (SELECT topic, count(*) AS total FROM ${s}.actions GROUP BY topic) c LEFT JOIN r USING (topic)),
      d AS (SELECT topic, count(*)::integer AS dead FROM ${s}.dead GROUP BY topic)
      SELECT t.topic, coalesce(a.waiting, 0) AS waiting, coalesce(a.running, 0) AS running, coalesce(d.dead, 0) AS dead, p.topic IS NOT NULL AS paused
      FROM t LEFT JOIN a USING (topic) LEFT JOIN d USING (topic) LEFT JOIN ${s}.paused_topics p USING (topic) ORDER BY t.topic`,
    topicHealth: `SELECT t.topic, ${s}.clock_ms(NULL) AS now_ms,
        ${s}.earliest_waiting(t.topic) AS earliest,
        EXISTS (SELECT 1 FROM ${s}.paused_topics p WHERE p.topic = t.topic) AS paused
      FROM unnest($1::text[]) AS t(topic)`,
    now: `SELECT ${s}.clock_ms(NULL) AS now_ms`,
    // $1 topic, $2 series key, $3 expect ('token', 'payload', 'absent'), $4 its value, $5 overlap, $6 next ('keep', 'remove', 'delay', 'at'),
    // $7 its ms, $8 its payload, $9 occurrence keys, $10 absolute, $11 ms, $12 payloads, $13 orphan grace ms (0: none)
    // (see advance_series in the migrations), $14 the store's id in a transaction, else null.
    // The guard is read in the same statement, after the step: it refuses (and so undoes) a step meant for a transaction that would commit on its own, or on another database.
    advanceSeries: `SELECT r.status, r.created, r.skipped, r.cancelled, r.soonest, r.now_ms, ${s}.clock_ms($14::text) AS guard
      FROM ${s}.advance_series($1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::bigint, $8::text, $9::text[], $10::boolean[], $11::bigint[], $12::text[],
        $13::bigint) r`,
    // ---- outcomes of recurring occurrences: the same, and the schedule's last run (recordSeriesRuns) ----
    // Used only when a run is a recurring occurrence's, so the outcomes of one-off actions pay nothing for it.
    // completeOccurrences: $1 topic, $2 members, $3 tokens, $4 start times (null for a run that is no occurrence).
    completeOccurrences: `WITH gone AS (
        DELETE FROM ${s}.actions a USING unnest($2::text[], $3::bigint[], $4::bigint[]) WITH ORDINALITY AS r(member, token, started, n)
        WHERE a.topic = $1::text AND a.member = r.member AND a.token = r.token
        RETURNING a.member, a.attempt, r.started, r.n),
      ${recordSeriesRuns(s, 'gone', 'succeeded')}
      SELECT count(*)::integer AS completed FROM gone`,
    // retryOccurrence: $1 topic, $2 member, $3 token, $4 backoff ms, $5 start time.
    retryOccurrence: `WITH moved AS (
        UPDATE ${s}.actions a SET token = nextval('${s}.tokens'), attempt = a.attempt + 1, due_at = ${s}.clock_ms(NULL) + $4::bigint
        WHERE a.topic = $1::text AND a.member = $2::text AND a.token = $3::bigint
        RETURNING a.member, a.due_at, a.attempt - 1 AS attempt, $5::bigint AS started, 1 AS n),
      ${recordSeriesRuns(s, 'moved', 'retrying')}
      SELECT m.due_at FROM moved m`,
    // buryOccurrence: $1 topic, $2 member, $3 token, $4 error, $5 start time.
    buryOccurrence: `WITH clock AS MATERIALIZED (SELECT ${s}.clock_ms(NULL) AS now),
      gone AS (DELETE FROM ${s}.actions a WHERE a.topic = $1::text AND a.member = $2::text AND a.token = $3::bigint
        RETURNING a.*, $5::bigint AS started, 1 AS n),
      ${recordSeriesRuns(s, 'gone', 'dead')}
      INSERT INTO ${s}.dead AS d (topic, id, key, payload, batch, items, due_at, attempts, error, died_at)
      SELECT g.topic, g.member, g.key, g.payload, g.batch, g.items, g.due_at, g.attempt, $4::text, c.now FROM gone g, clock c
      ON CONFLICT (topic, id) DO UPDATE SET key = excluded.key, payload = excluded.payload, batch = excluded.batch, items = excluded.items,
        due_at = excluded.due_at, attempts = excluded.attempts, error = excluded.error, died_at = excluded.died_at
      RETURNING 1`,
    // ---- end outcomes of recurring occurrences ----
    // ---- Recurring: declaration marks and last runs ----
    // $1 topic, $2 series keys, $3 ms from now. A mark only moves later. Keys in code point order, once each: two
    // instances declaring the same series lock their rows in the same order (no deadlock).
    declareSeries: `WITH clock AS MATERIALIZED (SELECT ${s}.clock_ms(NULL) AS now)
      INSERT INTO ${s}.series_marks AS m (topic, key, declared_until)
      SELECT $1::text, k.key, c.now + $3::bigint FROM (SELECT DISTINCT unnest($2::text[]) COLLATE "C" AS key) k, clock c ORDER BY k.key
      ON CONFLICT (topic, key) DO UPDATE SET declared_until = excluded.declared_until WHERE m.declared_until < excluded.declared_until`,
    // $1 topic, $2 series keys: one row per key, in order, all null where none is recorded.
    lastSeriesRuns: `SELECT r.outcome, r.occurrence, r.started_at, r.attempt, r.at FROM unnest($2::text[]) WITH ORDINALITY AS k(key, n)
      LEFT JOIN ${s}.series_runs r ON r.topic = $1::text AND r.key = k.key ORDER BY k.n`,
    // ---- end declaration marks and last runs ----
  };
}
