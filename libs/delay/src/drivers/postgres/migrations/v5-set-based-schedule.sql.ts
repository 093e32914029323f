/**
 * Migration 5, cheaper writes:
 * - `earliest_waiting` (read by every schedule, reschedule, collect and
 *   recurring write, to decide whether to notify) reads the topic's due
 *   index from its first entry and stops at the first row not running,
 *   where `min()` with the running filter was planned as a read of every
 *   row of the topic (4 ms per call at 20,000 pending);
 * - `schedule` (every schedule, gathered schedules and scheduleMany) writes
 *   a call whose entries all replace (no `ifExists: 'keep'`) and name
 *   distinct keys with one set-based INSERT, instead of one INSERT per
 *   entry. Every other call goes to migration 1's function, renamed
 *   `schedule_each`, unchanged.
 * `__schema__` is replaced by the schema's name; each function pins its
 * search_path.
 */
export const MIGRATION_5_SQL = String.raw`
-- The earliest due time of the topic's actions that are not running (null: none), through the due index in order.
-- A plan is cached per connection, and one made while the table was small (just truncated, or new: estimated at a
-- row or two) read every row of the topic once it had grown (bitmap scan, then a sort: 4 ms at 20,000 pending). With
-- sequential and bitmap scans off, the only plan left is the due index read in order, which stops at the first row
-- not running, at any size. (schedule below sets the same, for its checks.)
CREATE OR REPLACE FUNCTION __schema__.earliest_waiting(p_topic text) RETURNS bigint LANGUAGE sql STABLE
SET enable_seqscan = off SET enable_bitmapscan = off SET search_path = pg_catalog, pg_temp AS $fn$
  SELECT a.due_at FROM __schema__.actions a
  WHERE a.topic = p_topic AND a.token NOT IN (SELECT unnest(r.tokens) FROM __schema__.runs r WHERE r.topic = p_topic)
  ORDER BY a.topic, a.due_at LIMIT 1
$fn$;

ALTER FUNCTION __schema__.schedule(text, text[], boolean[], bigint[], text[], boolean[], text[], bigint, bigint, text) RENAME TO schedule_each;

-- schedule: the same call, the same rows, the same refusals as schedule_each
-- (migration 1): all or nothing; the first refused entry, in order, returns
-- alone (status -1 too far in the past, -2 beyond the horizon, -3 the key has
-- an open batch; attempt = the entry's position); else one row per entry in
-- order (1 created, 2 replaced). When every entry replaces and no key comes
-- twice, the entries are written by one INSERT: each row is written once,
-- so the order of the entries cannot matter, and a key met with an open
-- batch between the check and the write raises NDKC1 for the first such
-- entry, undoing the call. A key given twice (the second must see the
-- first's arming) or an entry that keeps goes to schedule_each.
CREATE FUNCTION __schema__.schedule(
  p_topic text, p_keys text[], p_absolute boolean[], p_values bigint[], p_payloads text[], p_keep boolean[], p_traces text[],
  p_max_past bigint, p_horizon bigint, p_tx_store text
) RETURNS TABLE (status integer, due_at bigint, payload text, attempt integer, now_ms bigint)
LANGUAGE plpgsql VOLATILE SET enable_seqscan = off SET enable_bitmapscan = off SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
  v_count integer := coalesce(cardinality(p_keys), 0);
  v_now bigint;
  v_refused record;
  v_earliest bigint;
  v_soonest bigint;
  v_status integer[];
  v_missing integer;
BEGIN
  IF v_count = 0 OR p_keep IS NULL OR (true = ANY (p_keep)) IS NOT FALSE
     OR (SELECT count(DISTINCT k.key COLLATE "C") FROM unnest(p_keys) AS k(key)) <> v_count THEN
    RETURN QUERY SELECT * FROM __schema__.schedule_each(p_topic, p_keys, p_absolute, p_values, p_payloads, p_keep, p_traces, p_max_past, p_horizon, p_tx_store);
    RETURN;
  END IF;
  v_now := __schema__.clock_ms(p_tx_store);
  SELECT e.n, e.at, CASE WHEN e.at < 0 OR e.at < v_now - p_max_past THEN -1 WHEN e.at > v_now + p_horizon THEN -2 ELSE -3 END AS status
  INTO v_refused
  FROM (SELECT u.key, u.n, CASE WHEN u.absolute THEN u.value ELSE v_now + u.value END AS at
        FROM unnest(p_keys, p_absolute, p_values) WITH ORDINALITY AS u(key, absolute, value, n)) e
    -- One probe of the primary key per entry (a lateral subquery with a limit is never turned into a hash of the topic's rows).
    LEFT JOIN LATERAL (SELECT a.batch FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = e.key LIMIT 1) b ON true
  WHERE e.at < 0 OR e.at < v_now - p_max_past OR e.at > v_now + p_horizon OR b.batch
  ORDER BY e.n LIMIT 1;
  IF FOUND THEN
    RETURN QUERY SELECT v_refused.status::integer, v_refused.at::bigint, NULL::text, v_refused.n::integer, v_now;
    RETURN;
  END IF;
  v_earliest := __schema__.earliest_waiting(p_topic);
  -- A run of a previous arming may be going on: the new token is not running, and the run's outcome will not match it.
  WITH e AS (
    SELECT u.key, u.n, CASE WHEN u.absolute THEN u.value ELSE v_now + u.value END AS at, u.payload, u.trace
    FROM unnest(p_keys, p_absolute, p_values, p_payloads, p_traces) WITH ORDINALITY AS u(key, absolute, value, payload, trace, n)),
  written AS (
    INSERT INTO __schema__.actions AS a (topic, member, key, token, due_at, payload, trace)
    SELECT p_topic, e.key, e.key, nextval('__schema__.tokens'), e.at, e.payload, e.trace FROM e ORDER BY e.n
    ON CONFLICT (topic, member) DO UPDATE SET token = excluded.token, attempt = 1, due_at = excluded.due_at,
      payload = excluded.payload, trace = excluded.trace
    WHERE NOT a.batch
    RETURNING a.member, (a.xmax = 0) AS created)
  SELECT array_agg(CASE WHEN w.member IS NULL THEN 0 WHEN w.created THEN 1 ELSE 2 END ORDER BY e.n), min(e.at)
  INTO v_status, v_soonest
  FROM e LEFT JOIN written w ON w.member = e.key COLLATE "C";
  v_missing := array_position(v_status, 0);
  IF v_missing IS NOT NULL THEN
    RAISE EXCEPTION 'nestjs-delay: key % of topic % has an open batch', p_keys[v_missing], p_topic USING ERRCODE = 'NDKC1';
  END IF;
  IF v_earliest IS NULL OR v_soonest < v_earliest OR __schema__.behind(p_topic, v_earliest, v_soonest, v_now) THEN
    PERFORM __schema__.wake(p_topic);
  END IF;
  RETURN QUERY SELECT u.status, CASE WHEN u.absolute THEN u.value ELSE v_now + u.value END, u.payload, 1, v_now
  FROM unnest(v_status, p_absolute, p_values, p_payloads) WITH ORDINALITY AS u(status, absolute, value, payload, n) ORDER BY u.n;
END
$fn$;
`;
