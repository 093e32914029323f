/**
 * Migration 8: the driver keeps its busiest tables vacuumed, and the plain
 * steps of a claim decide their wake without reading the topic's due order.
 * - `vacuum_candidates` lists those of the schema's tables that hold at
 *   least so many dead rows and that the calling role may vacuum (it owns
 *   them, or has its owner's privileges); postgres-vacuum.ts vacuums them.
 * - `advance_series_steps` (migration 7) measured the topic's earliest
 *   waiting action before its plain steps, to decide whether to notify: a
 *   read of the due order from the topic's first row, past every running
 *   action, 3.4 ms of the call's 8 ms at 10,000 schedules every second. An
 *   occurrence whose instant has passed wakes the topic whatever that read
 *   says (it is the earliest, or the topic is behind), so when the plain
 *   steps created one, nothing is read; otherwise the earliest is read once
 *   they are written (theirs being it, or tied with it, wakes: at worst one
 *   notification more than before, on a tie). The other steps decide their
 *   own wake as in migration 4. Rows, writes and locks as in migration 7.
 * `__schema__` is replaced by the schema's name; each function pins its
 * search_path.
 */
export const MIGRATION_8_SQL = String.raw`
-- The tables every run, claim and recurring step writes and deletes rows of, with at least p_min_dead dead rows
-- (the server's statistics, a second or so behind), most first, among those the calling role owns and that no
-- vacuum it can see is working on (autovacuum's show only to roles that may read every statistic).
CREATE FUNCTION __schema__.vacuum_candidates(p_min_dead bigint) RETURNS TABLE (table_name text, dead bigint)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
  SELECT c.relname::text, s.n_dead_tup
  FROM pg_class c JOIN pg_stat_all_tables s ON s.relid = c.oid
  WHERE c.relnamespace = '__schema__'::regnamespace AND c.relname IN ('actions', 'runs', 'series', 'series_runs')
    AND s.n_dead_tup >= p_min_dead AND pg_has_role(c.relowner, 'USAGE')
    AND NOT EXISTS (SELECT 1 FROM pg_stat_progress_vacuum v WHERE v.relid = c.oid)
  ORDER BY s.n_dead_tup DESC
$fn$;

-- advance_series_steps: as migration 7 (same arguments, rows, writes and
-- locks); only the wake is decided otherwise (see above).
CREATE OR REPLACE FUNCTION __schema__.advance_series_steps(
  p_topic text, p_keys text[], p_expect text[], p_expect_values text[], p_overlap text[],
  p_next text[], p_next_values bigint[], p_next_payloads text[],
  p_counts integer[], p_occ_keys text[], p_occ_absolute boolean[], p_occ_values bigint[], p_occ_payloads text[],
  p_orphan_grace bigint[],
  p_while_next text[], p_while_values bigint[], p_while_payloads text[], p_while_counts integer[], p_while_skipped text[]
) RETURNS TABLE (ord integer, status integer, created text[], skipped text[], cancelled text[], soonest bigint, now_ms bigint,
  blocker text, blocker_state text, blocker_due bigint, blocker_attempt integer)
LANGUAGE plpgsql VOLATILE SET enable_seqscan = off SET enable_bitmapscan = off SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
  v_total integer := coalesce(cardinality(p_keys), 0);
  v_plain integer[] := '{}';
  v_plain_keys text[];
  v_occ integer := 0;
  v_while integer := 0;
  v_count integer;
  v_while_count integer;
  v_alone boolean;
  v_measured boolean := false;
  v_earliest bigint;
  v_soonest bigint;
  v_plain_soonest bigint;
  v_wake boolean := false;
  v_now bigint;
  r record;
BEGIN
  IF v_total = 0 THEN RETURN; END IF;
  -- Every tick of the call locked first, in key order (the caller sends the keys in code point order): two
  -- statements, whichever steps they make each way, then never wait for each other in opposite orders.
  PERFORM 1 FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = ANY (p_keys) ORDER BY a.member FOR UPDATE;

  -- The plain steps (see above). A key given twice anywhere in the call leaves every step to series_step.
  IF (SELECT count(DISTINCT k.key COLLATE "C") FROM unnest(p_keys || coalesce(p_occ_keys, '{}')) AS k(key)) = v_total + coalesce(cardinality(p_occ_keys), 0) THEN
    -- Running: a claim that took a tick marks its runs row, so only those rows are read (the runs_ticks index), once.
    WITH running AS MATERIALIZED (SELECT unnest(x.tokens) AS token FROM __schema__.runs x WHERE x.topic = p_topic AND x.ticks)
    SELECT coalesce(array_agg(e.n ORDER BY e.n), '{}') INTO v_plain
    FROM unnest(p_keys, p_expect, p_expect_values, p_overlap, p_next, p_orphan_grace) WITH ORDINALITY AS e(key, expect, expect_value, overlap, next, grace, n)
      JOIN LATERAL (SELECT a.token, a.batch FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = e.key LIMIT 1) a ON true
    WHERE e.expect = 'token' AND e.overlap <> 'cancelPrevious' AND e.grace = 0 AND e.next IN ('delay', 'at')
      -- In the running tokens, through a hashed lookup (NOT IN is never planned as a join that reads them all per tick).
      AND NOT a.batch AND a.token::text = e.expect_value AND NOT (a.token NOT IN (SELECT r.token FROM running r));
  END IF;
  IF cardinality(v_plain) > 0 THEN
    -- Their series rows locked in key order, then those with an occurrence still waiting or running left to series_step.
    PERFORM 1 FROM __schema__.series s WHERE s.topic = p_topic AND s.key = ANY (ARRAY(SELECT p_keys[n] FROM unnest(v_plain) AS p(n)))
    ORDER BY s.key FOR UPDATE;
    SELECT coalesce(array_agg(p.n ORDER BY p.n), '{}') INTO v_plain
    FROM unnest(v_plain) AS p(n)
      LEFT JOIN LATERAL (SELECT s.occurrences FROM __schema__.series s WHERE s.topic = p_topic AND s.key = p_keys[p.n] LIMIT 1) s ON true
      LEFT JOIN LATERAL (SELECT 1 AS one FROM unnest(s.occurrences) AS o(member)
        CROSS JOIN LATERAL (SELECT 1 FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = o.member LIMIT 1) a LIMIT 1) alive ON true
    WHERE alive.one IS NULL;
  END IF;
  IF cardinality(v_plain) > 0 THEN
    v_plain_keys := ARRAY(SELECT p_keys[n] FROM unnest(v_plain) AS p(n));
    v_now := __schema__.clock_ms(NULL);
    FOR r IN
      WITH steps AS (
        SELECT e.n, e.key, CASE WHEN e.next = 'at' THEN e.value ELSE v_now + e.value END AS at, e.payload
        FROM unnest(p_keys, p_next, p_next_values, p_next_payloads) WITH ORDINALITY AS e(key, next, value, payload, n)
        WHERE e.n = ANY (v_plain)),
      occurrences AS (
        SELECT c.n, o.i, p_occ_keys[o.i] AS key,
          CASE WHEN p_occ_absolute[o.i] THEN p_occ_values[o.i] ELSE v_now + p_occ_values[o.i] END AS at, p_occ_payloads[o.i] AS payload
        FROM (SELECT u.n, u.count, sum(u.count) OVER (ORDER BY u.n) - u.count AS first FROM unnest(p_counts) WITH ORDINALITY AS u(count, n)) c
          CROSS JOIN LATERAL generate_series(c.first + 1, c.first + c.count) AS o(i)
        WHERE c.n = ANY (v_plain)),
      inserted AS (
        -- An occurrence key names one instant: created once, never over an existing action.
        INSERT INTO __schema__.actions (topic, member, key, token, due_at, payload)
        SELECT p_topic, o.key, o.key, nextval('__schema__.tokens'), o.at, o.payload FROM occurrences o ORDER BY o.i
        ON CONFLICT (topic, member) DO NOTHING
        RETURNING member),
      made AS (
        SELECT o.n, array_agg(o.key ORDER BY o.i) FILTER (WHERE w.member IS NOT NULL) AS created,
          array_agg(o.key ORDER BY o.i) FILTER (WHERE w.member IS NULL) AS skipped,
          min(o.at) FILTER (WHERE w.member IS NOT NULL) AS soonest
        FROM occurrences o LEFT JOIN inserted w ON w.member = o.key COLLATE "C"
        GROUP BY o.n),
      rearmed AS (
        -- A run of the tick still going no longer holds it; its outcome will not match the new token.
        UPDATE __schema__.actions a SET token = nextval('__schema__.tokens'), attempt = 1, due_at = s.at,
          payload = s.payload, trace = NULL, tick = true
        FROM steps s WHERE a.topic = p_topic AND a.member = ANY (v_plain_keys) AND a.member = s.key COLLATE "C"),
      listed AS (
        INSERT INTO __schema__.series AS x (topic, key, occurrences)
        SELECT p_topic, s.key, coalesce(m.created, '{}') FROM steps s LEFT JOIN made m ON m.n = s.n ORDER BY s.key COLLATE "C"
        ON CONFLICT (topic, key) DO UPDATE SET occurrences = excluded.occurrences)
      -- (rearmed and listed are run to completion though nothing reads them.)
      SELECT s.n, coalesce(m.created, '{}') AS created, coalesce(m.skipped, '{}') AS skipped, least(s.at, m.soonest) AS soonest
      FROM steps s LEFT JOIN made m ON m.n = s.n
    LOOP
      v_plain_soonest := least(v_plain_soonest, r.soonest);
      ord := r.n;
      status := 1;
      created := r.created;
      skipped := r.skipped;
      cancelled := '{}';
      soonest := r.soonest;
      now_ms := v_now;
      blocker := NULL;
      blocker_state := NULL;
      blocker_due := NULL;
      blocker_attempt := NULL;
      RETURN NEXT;
    END LOOP;
    -- Their wake, decided now. Something due already (an occurrence of an instant passed) always wakes: it is earlier
    -- than every waiting action, or the topic is behind. Else the earliest waiting action is measured now that they
    -- are written: it is the earliest of those before and theirs, so theirs being it (or tied with it) wakes.
    IF v_plain_soonest IS NOT NULL THEN
      IF v_plain_soonest <= v_now AND NOT EXISTS (SELECT 1 FROM __schema__.paused_topics p WHERE p.topic = p_topic) THEN
        v_wake := true;
      ELSE
        v_earliest := coalesce(__schema__.earliest_waiting(p_topic), 9223372036854775807);
        v_wake := v_plain_soonest <= v_earliest OR __schema__.behind(p_topic, v_earliest, v_plain_soonest, v_now);
        v_earliest := NULL;
      END IF;
    END IF;
  END IF;

  -- The rest, one by one, as in migration 4, with a wake of their own.
  FOR n IN 1 .. v_total LOOP
    v_count := p_counts[n];
    v_while_count := p_while_counts[n];
    IF n = ANY (v_plain) THEN
      v_occ := v_occ + v_count;
      v_while := v_while + v_while_count;
      CONTINUE;
    END IF;
    v_alone := p_expect[n] <> 'token' OR p_overlap[n] = 'cancelPrevious';
    IF NOT v_alone AND NOT v_measured THEN
      v_earliest := greatest(v_earliest, coalesce(__schema__.earliest_waiting(p_topic), 9223372036854775807));
      v_measured := true;
    END IF;
    SELECT * INTO r FROM __schema__.series_step(p_topic, p_keys[n], p_expect[n], p_expect_values[n], p_overlap[n],
      p_next[n], p_next_values[n], p_next_payloads[n],
      coalesce(p_occ_keys[v_occ + 1 : v_occ + v_count], '{}'), coalesce(p_occ_absolute[v_occ + 1 : v_occ + v_count], '{}'),
      coalesce(p_occ_values[v_occ + 1 : v_occ + v_count], '{}'), coalesce(p_occ_payloads[v_occ + 1 : v_occ + v_count], '{}'),
      p_orphan_grace[n],
      p_while_next[n], p_while_values[n], p_while_payloads[n], coalesce(p_while_skipped[v_while + 1 : v_while + v_while_count], '{}'),
      v_alone);
    v_occ := v_occ + v_count;
    v_while := v_while + v_while_count;
    v_now := r.now_ms;
    -- Measured again before the next tick's step: this one may have moved the earliest later.
    IF v_alone THEN v_measured := false; ELSE v_soonest := least(v_soonest, r.soonest); END IF;
    ord := n;
    status := r.status;
    created := r.created;
    skipped := r.skipped;
    cancelled := r.cancelled;
    soonest := r.soonest;
    now_ms := r.now_ms;
    blocker := r.blocker;
    blocker_state := r.blocker_state;
    blocker_due := r.blocker_due;
    blocker_attempt := r.blocker_attempt;
    RETURN NEXT;
  END LOOP;
  IF v_wake OR (v_soonest IS NOT NULL AND (v_soonest < v_earliest OR __schema__.behind(p_topic, v_earliest, v_soonest, v_now))) THEN
    PERFORM __schema__.wake(p_topic);
  END IF;
END
$fn$;
`;
