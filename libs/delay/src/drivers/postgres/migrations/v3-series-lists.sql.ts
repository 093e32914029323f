/**
 * Migration 3: what listRecurring and upsertRecurringMany send, as functions
 * of the schema's (see postgres-statement-functions.sql.ts for why every
 * statement is one call of one). `__schema__` is replaced by the schema's
 * name; each function pins its search_path.
 */
export const MIGRATION_3_SQL = String.raw`
-- list_series: a page of the topic's recurring ticks by key (the primary
-- key's order, code point order under COLLATE "C"), after p_after (from the
-- first when null). A tick keeps its row, and so its place, when it is
-- re-armed, so a listing that pages so sees each schedule once.
CREATE FUNCTION __schema__.list_series(p_topic text, p_after text, p_limit integer)
RETURNS TABLE (member text, key text, token bigint, attempt integer, due_at bigint, payload text, batch boolean, items text[], trace text, tick boolean,
  state text, paused boolean)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
  WITH running AS MATERIALIZED (SELECT unnest(n.tokens) AS token FROM __schema__.runs n WHERE n.topic = p_topic),
  page AS (
    SELECT a.* FROM __schema__.actions a
    WHERE a.topic = p_topic AND a.tick AND (p_after IS NULL OR a.member > p_after)
    ORDER BY a.member LIMIT p_limit
  )
  SELECT a.member::text, a.key::text, a.token, a.attempt, a.due_at, a.payload, a.batch, a.items, a.trace, a.tick,
    CASE WHEN a.token IN (SELECT r.token FROM running r) THEN 'running' ELSE 'waiting' END,
    EXISTS (SELECT 1 FROM __schema__.paused_topics p WHERE p.topic = p_topic)
  FROM page a ORDER BY a.member
$fn$;

-- get_each: the actions under these members, with ord (1-based) their
-- place in p_members; a member with no action has no row.
CREATE FUNCTION __schema__.get_each(p_topic text, p_members text[])
RETURNS TABLE (ord integer, member text, key text, token bigint, attempt integer, due_at bigint, payload text, batch boolean, items text[], trace text,
  tick boolean, state text, paused boolean)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
  WITH running AS MATERIALIZED (SELECT unnest(n.tokens) AS token FROM __schema__.runs n WHERE n.topic = p_topic)
  SELECT k.ord::integer, a.member::text, a.key::text, a.token, a.attempt, a.due_at, a.payload, a.batch, a.items, a.trace, a.tick,
    CASE WHEN a.token IN (SELECT r.token FROM running r) THEN 'running' ELSE 'waiting' END,
    EXISTS (SELECT 1 FROM __schema__.paused_topics p WHERE p.topic = p_topic)
  FROM unnest(p_members) WITH ORDINALITY AS k(member, ord)
  JOIN __schema__.actions a ON a.topic = p_topic AND a.member = k.member
$fn$;

-- advance_series_each: per-key recurring writes of one topic (no
-- occurrences, overlap 'allow', no orphan grace), each one advance_series
-- call, all in one statement: one round trip and one commit for a batch.
-- The caller sends the keys in code point order, so two batches lock rows
-- in the same order. Per entry: its status (as advance_series), the tick's
-- due time once written (null if none), and the clock. A tick created
-- ('absent') starts with no last run: one an earlier series of the key left
-- is dropped, so the caller may build the schedule from what it wrote.
CREATE FUNCTION __schema__.advance_series_each(
  p_topic text, p_keys text[], p_expect text[], p_expect_values text[], p_next text[], p_next_values bigint[], p_next_payloads text[]
) RETURNS TABLE (ord integer, status integer, due_at bigint, now_ms bigint)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
  v_status integer;
  v_now bigint;
  v_due bigint;
BEGIN
  FOR n IN 1 .. coalesce(cardinality(p_keys), 0) LOOP
    SELECT r.status, r.now_ms INTO v_status, v_now
    FROM __schema__.advance_series(p_topic, p_keys[n], p_expect[n], p_expect_values[n], 'allow', p_next[n], p_next_values[n], p_next_payloads[n],
      '{}'::text[], '{}'::boolean[], '{}'::bigint[], '{}'::text[], 0) r;
    v_due := NULL;
    IF v_status = 1 AND p_next[n] IN ('delay', 'at') THEN
      SELECT a.due_at INTO v_due FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = p_keys[n];
      IF p_expect[n] = 'absent' THEN
        DELETE FROM __schema__.series_runs r WHERE r.topic = p_topic AND r.key = p_keys[n];
      END IF;
    END IF;
    ord := n;
    status := v_status;
    due_at := v_due;
    now_ms := v_now;
    RETURN NEXT;
  END LOOP;
END
$fn$;
`;
