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
  readonly get: string;
  readonly list: string;
  readonly count: string;
  readonly listDead: string;
  readonly countDead: string;
  readonly redrive: string;
  readonly claim: string;
  readonly recover: string;
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
}

/** The columns a reader of actions needs. */
const ACTION_COLUMNS = 'a.member, a.key, a.token, a.attempt, a.due_at, a.state, a.payload, a.batch, a.items, a.trace';

export function postgresStatements(schema: string): PostgresStatements {
  const s = schema;
  const paused = `EXISTS (SELECT 1 FROM ${s}.paused_topics p WHERE p.topic = $1::text)`;
  return {
    channel: s,
    // $1 topic, $2 keys, $3 absolute, $4 values, $5 payloads, $6 keep, $7 traces, $8 max past, $9 horizon, $10 in a transaction
    schedule: `SELECT status, due_at, payload, attempt, now_ms FROM ${s}.schedule($1::text, $2::text[], $3::boolean[], $4::bigint[], $5::text[], $6::boolean[], $7::text[], $8::bigint, $9::bigint, $10::boolean)`,
    reschedule: `SELECT status, due_at, payload, attempt, now_ms FROM ${s}.reschedule($1::text, $2::text, $3::boolean, $4::bigint, $5::bigint, $6::bigint, $7::boolean)`,
    collect: `SELECT status, size, due_at, now_ms FROM ${s}.collect($1::text, $2::text, $3::text, $4::bigint, $5::bigint, $6::boolean, $7::integer, $8::text, $9::boolean, $10::bigint)`,
    // The clock is read last, after the delete: its guard refuses (and so undoes) a delete that would commit on its own.
    cancel: `WITH gone AS (DELETE FROM ${s}.actions a WHERE a.topic = $1::text AND (a.member = $2::text OR (a.key = $2::text AND a.cancel_by_key)) RETURNING 1)
      SELECT (SELECT count(*) FROM gone)::integer AS removed, ${s}.clock_ms($3::boolean) AS now_ms`,
    get: `SELECT ${ACTION_COLUMNS}, ${paused} AS paused FROM ${s}.actions a WHERE a.topic = $1::text AND a.member = $2::text`,
    // A listing shows a batch's first LISTED_BATCH_ITEMS items and its size, not the whole array.
    list: `SELECT ${ACTION_COLUMNS.replace('a.items', `a.items[1:${LISTED_BATCH_ITEMS}] AS items, cardinality(a.items) AS size`)}, ${paused} AS paused
      FROM ${s}.actions a WHERE a.topic = $1::text
      ORDER BY a.state = 'waiting', a.due_at, a.member LIMIT $2::integer OFFSET $3::integer`,
    count: `SELECT count(*)::integer AS n FROM ${s}.actions a WHERE a.topic = $1::text`,
    listDead: `SELECT d.id, d.key, d.payload, d.batch, d.items, d.due_at, d.attempts, d.error, d.died_at FROM ${s}.dead d WHERE d.topic = $1::text
      ORDER BY d.died_at, d.id LIMIT $2::integer OFFSET $3::integer`,
    countDead: `SELECT count(*)::integer AS n FROM ${s}.dead d WHERE d.topic = $1::text`,
    redrive: `SELECT ${s}.redrive($1::text, $2::text) AS status`,
    // $1 topic, $2 limit, $3 lease ms, $4 claim id, $5 resume point (see below) or null. First, runs whose lease expired (their instance died or
    // stalled) go back to waiting as a new attempt under a new token; they are claimable by the next claim.
    // Then up to $2 due actions of an unpaused topic are leased, earliest first, skipping rows another
    // transaction holds. An open batch is closed as it is claimed: re-filed under its own id.
    // next: the earliest due time after now, or lease to expire, to sleep until.
    // The clock is read once (MATERIALIZED) and compared as a scalar subquery, `(SELECT now FROM clock)`: then
    // it is an index bound, and a scan stops at the first row not yet due (or lease not yet expired); joined as
    // a table it was a filter, and a claim read every waiting row of the topic before it found that few were due.
    //
    // ---- drain: the claim's rows, taken by their physical address ----
    // `picked` locks the rows and hands their ctid to `claimed`, whose UPDATE fetches each row straight from
    // its heap page instead of through the primary key again (a quarter of the claim's buffer reads per row).
    // A row locked here keeps its ctid until this statement commits. A row another transaction changed between
    // the statement's snapshot and the lock is locked in its newest version, which the UPDATE's snapshot does
    // not see: it is left waiting for the next claim, never taken twice (the UPDATE also checks `waiting`).
    // When the claim is full, the consumer claims again at once: `next_at` and `more_due` are then not
    // computed (null and true); a claim that then finds nothing reports them.
    // $5, the drain's resume point, or null: the due time of the last row the consumer's previous (full) claim
    // took. The claim then starts its scan there instead of at the topic's first entry, past the index entries
    // of every row claimed before in the drain, which a long transaction elsewhere keeps from being cleaned
    // (each one costs a heap visit while any snapshot may still see it). Rows left behind (re-armed with an
    // earlier due time, held by another transaction, put back) are taken by a claim without it: the consumer
    // sends null when its last claim was not full, after a wake (a write made the topic's earliest due time
    // earlier, runs were handed back), after runs were revived, and at least once a second.
    // ---- end drain ----
    claim: `WITH clock AS MATERIALIZED (SELECT ${s}.clock_ms(false) AS now),
      revived AS (
        UPDATE ${s}.actions a SET state = 'waiting', token = nextval('${s}.tokens'), attempt = a.attempt + 1, lease_until = NULL, claim_id = NULL
        FROM (SELECT e.member FROM ${s}.actions e WHERE e.topic = $1::text AND e.state = 'running' AND e.lease_until <= (SELECT now FROM clock)
              ORDER BY e.lease_until LIMIT 100 FOR UPDATE OF e SKIP LOCKED) x
        WHERE a.topic = $1::text AND a.member = x.member
        RETURNING 1),
      picked AS (
        SELECT w.ctid AS row_id FROM ${s}.actions w
        WHERE w.topic = $1::text AND w.state = 'waiting' AND w.due_at <= (SELECT now FROM clock) AND w.due_at >= coalesce($5::bigint, -9223372036854775807) AND $2::integer > 0 AND NOT ${paused}
        ORDER BY w.due_at, w.member LIMIT $2::integer FOR UPDATE OF w SKIP LOCKED),
      claimed AS (
        UPDATE ${s}.actions a SET state = 'running', lease_until = (SELECT now FROM clock) + $3::bigint, claim_id = $4::text, cancel_by_key = false,
          member = CASE WHEN a.batch AND a.member = a.key THEN a.key || chr(31) || lpad(a.token::text, 20, '0') ELSE a.member END
        WHERE a.ctid = ANY (ARRAY(SELECT p.row_id FROM picked p)) AND a.topic = $1::text AND a.state = 'waiting'
        RETURNING ${ACTION_COLUMNS}),
      head AS MATERIALIZED (
        SELECT c.now AS now_ms, (SELECT count(*) FROM revived)::integer AS revived, ${paused} AS paused,
          CASE WHEN $2::integer > 0 AND (SELECT count(*) FROM picked) >= $2::integer THEN NULL
            ELSE least((SELECT min(w.due_at) FROM ${s}.actions w WHERE w.topic = $1::text AND w.state = 'waiting' AND w.due_at > c.now),
                       (SELECT min(r.lease_until) FROM ${s}.actions r WHERE r.topic = $1::text AND r.state = 'running')) END AS next_at,
          CASE WHEN $2::integer > 0 AND (SELECT count(*) FROM picked) >= $2::integer THEN true
            ELSE (SELECT count(*) FROM (SELECT 1 FROM ${s}.actions w WHERE w.topic = $1::text AND w.state = 'waiting' AND w.due_at <= c.now
                    ORDER BY w.due_at, w.member LIMIT $2::integer + 1) d) > (SELECT count(*) FROM picked) END AS more_due
        FROM clock c)
      SELECT h.*, k.* FROM head h LEFT JOIN claimed k ON true`,
    // A claim whose reply was lost, asked again: what it took and still holds, leases renewed, same attempt.
    recover: `UPDATE ${s}.actions a SET lease_until = ${s}.clock_ms(false) + $3::bigint
      WHERE a.topic = $1::text AND a.claim_id = $2::text AND a.state = 'running'
      RETURNING ${ACTION_COLUMNS}, ${s}.clock_ms(false) AS now_ms`,
    complete: `DELETE FROM ${s}.actions a USING unnest($2::text[], $3::bigint[]) AS r(member, token)
      WHERE a.topic = $1::text AND a.member = r.member AND a.token = r.token`,
    retry: `UPDATE ${s}.actions a SET state = 'waiting', token = nextval('${s}.tokens'), attempt = a.attempt + 1,
        due_at = ${s}.clock_ms(false) + $4::bigint, lease_until = NULL, claim_id = NULL
      WHERE a.topic = $1::text AND a.member = $2::text AND a.token = $3::bigint
      RETURNING a.due_at`,
    bury: `WITH clock AS MATERIALIZED (SELECT ${s}.clock_ms(false) AS now),
      gone AS (DELETE FROM ${s}.actions a WHERE a.topic = $1::text AND a.member = $2::text AND a.token = $3::bigint RETURNING a.*)
      INSERT INTO ${s}.dead AS d (topic, id, key, payload, batch, items, due_at, attempts, error, died_at)
      SELECT g.topic, g.member, g.key, g.payload, g.batch, g.items, g.due_at, g.attempt, $4::text, c.now FROM gone g, clock c
      ON CONFLICT (topic, id) DO UPDATE SET key = excluded.key, payload = excluded.payload, batch = excluded.batch, items = excluded.items,
        due_at = excluded.due_at, attempts = excluded.attempts, error = excluded.error, died_at = excluded.died_at
      RETURNING 1`,
    extend: `UPDATE ${s}.actions a SET lease_until = ${s}.clock_ms(false) + $2::bigint FROM unnest($3::text[], $4::bigint[]) AS r(member, token)
      WHERE a.topic = $1::text AND a.member = r.member AND a.token = r.token AND a.state = 'running'`,
    // At shutdown: runs still going are handed back, due at once, same attempt, under a new token; every instance is told.
    release: `WITH back AS (
        UPDATE ${s}.actions a SET state = 'waiting', token = nextval('${s}.tokens'), lease_until = NULL, claim_id = NULL
        FROM unnest($2::text[], $3::bigint[]) AS r(member, token)
        WHERE a.topic = $1::text AND a.member = r.member AND a.token = r.token AND a.state = 'running'
        RETURNING a.due_at),
      woke AS (SELECT pg_notify('${s}', $1::text || ' ' || ${s}.clock_ms(false)) FROM (SELECT 1 FROM back LIMIT 1) b)
      SELECT (SELECT count(*) FROM back)::integer AS released, (SELECT count(*) FROM woke)::integer AS woke`,
    pause: `INSERT INTO ${s}.paused_topics (topic, paused_at) VALUES ($1::text, ${s}.clock_ms(false)) ON CONFLICT (topic) DO NOTHING RETURNING 1`,
    // Consumers asleep on a paused topic have no timer armed: "look now".
    resume: `WITH gone AS (DELETE FROM ${s}.paused_topics p WHERE p.topic = $1::text RETURNING 1),
      woke AS (SELECT pg_notify('${s}', $1::text || ' ' || ${s}.clock_ms(false)) FROM gone)
      SELECT (SELECT count(*) FROM gone)::integer AS resumed, (SELECT count(*) FROM woke)::integer AS woke`,
    isPaused: `SELECT ${paused} AS paused`,
    runNow: `WITH clock AS MATERIALIZED (SELECT ${s}.clock_ms(false) AS now),
      found AS (SELECT a.due_at FROM ${s}.actions a WHERE a.topic = $1::text AND a.member = $2::text AND a.state = 'waiting'),
      moved AS (UPDATE ${s}.actions a SET due_at = c.now FROM clock c
        WHERE a.topic = $1::text AND a.member = $2::text AND a.state = 'waiting' AND a.due_at > c.now RETURNING a.due_at),
      woke AS (SELECT pg_notify('${s}', $1::text || ' ' || m.due_at) FROM moved m)
      SELECT EXISTS (SELECT 1 FROM found) AS found, (SELECT count(*) FROM woke)::integer AS woke`,
    topics: `WITH t AS (SELECT topic FROM ${s}.actions UNION SELECT topic FROM ${s}.dead UNION SELECT topic FROM ${s}.paused_topics),
      a AS (SELECT topic, count(*) FILTER (WHERE state = 'waiting')::integer AS waiting, count(*) FILTER (WHERE state = 'running')::integer AS running
            FROM ${s}.actions GROUP BY topic),
      d AS (SELECT topic, count(*)::integer AS dead FROM ${s}.dead GROUP BY topic)
      SELECT t.topic, coalesce(a.waiting, 0) AS waiting, coalesce(a.running, 0) AS running, coalesce(d.dead, 0) AS dead, p.topic IS NOT NULL AS paused
      FROM t LEFT JOIN a USING (topic) LEFT JOIN d USING (topic) LEFT JOIN ${s}.paused_topics p USING (topic) ORDER BY t.topic`,
    topicHealth: `SELECT t.topic, ${s}.clock_ms(false) AS now_ms,
        (SELECT min(w.due_at) FROM ${s}.actions w WHERE w.topic = t.topic AND w.state = 'waiting') AS earliest,
        EXISTS (SELECT 1 FROM ${s}.paused_topics p WHERE p.topic = t.topic) AS paused
      FROM unnest($1::text[]) AS t(topic)`,
    now: `SELECT ${s}.clock_ms(false) AS now_ms`,
  };
}
