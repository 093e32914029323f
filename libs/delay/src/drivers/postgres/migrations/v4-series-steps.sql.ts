/**
 * Migration 4: the steps of many recurring series of one topic in one
 * statement. The ticks one claim takes are advanced together: one round
 * trip and one commit for all of them, where a statement each made every
 * tick wait for a commit of its own, and every commit that notifies waits
 * for the one before it. Each step is series_step, the advance_series of
 * migration 2 with its wake left to the caller: the topic's earliest
 * waiting action (a scan past every running one, which while thousands run
 * cost more than the rest of a step) is measured once for the ticks' steps,
 * which send at most one notification together. advance_series stays as it
 * is: an instance of the older code still running in a rolling deploy calls
 * it per tick, and takes the same locks and writes the same rows.
 * `__schema__` is replaced by the schema's name.
 */
export const MIGRATION_4_SQL = String.raw`
-- series_step: advance_series of migration 2, but the wake is the caller's
-- when p_check_wake is false: it neither looks up the topic's earliest
-- waiting action (a scan past every running one: the bulk of a step's cost
-- while many run) nor notifies. Its soonest says what it armed.
CREATE FUNCTION __schema__.series_step(
  p_topic text, p_key text, p_expect text, p_expect_value text, p_overlap text,
  p_next text, p_next_value bigint, p_next_payload text,
  p_keys text[], p_absolute boolean[], p_values bigint[], p_payloads text[],
  p_orphan_grace bigint,
  p_while_next text, p_while_value bigint, p_while_payload text, p_while_skipped text[],
  p_check_wake boolean
) RETURNS TABLE (status integer, created text[], skipped text[], cancelled text[], soonest bigint, now_ms bigint,
  blocker text, blocker_state text, blocker_due bigint, blocker_attempt integer)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  v_now bigint := __schema__.clock_ms(NULL);
  v_count integer := coalesce(cardinality(p_keys), 0);
  v_row __schema__.actions%ROWTYPE;
  v_found boolean;
  v_earliest bigint;
  v_soonest bigint;
  v_at bigint;
  v_listed text[];
  v_token bigint;
  v_attempt integer;
  v_due bigint;
  v_alive text[] := '{}';
  v_blocker text;
  v_blocker_state text;
  v_blocker_due bigint;
  v_blocker_attempt integer;
  v_refused boolean;
  v_held boolean;
  v_next text := p_next;
  v_next_value bigint := p_next_value;
  v_next_payload text := p_next_payload;
  v_created text[] := '{}';
  v_skipped text[] := '{}';
  v_cancelled text[] := '{}';
  v_armed boolean := false;
  v_member text;
  v_mark bigint;
BEGIN
  -- The tick's row lock serialises the steps of one series.
  SELECT * INTO v_row FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = p_key FOR UPDATE;
  v_found := FOUND;
  IF p_expect = 'absent' THEN
    IF v_found THEN RETURN QUERY SELECT 0, v_created, v_skipped, v_cancelled, NULL::bigint, v_now, NULL::text, NULL::text, NULL::bigint, NULL::integer; RETURN; END IF;
  ELSIF NOT v_found THEN
    RETURN QUERY SELECT 0, v_created, v_skipped, v_cancelled, NULL::bigint, v_now, NULL::text, NULL::text, NULL::bigint, NULL::integer; RETURN;
  ELSIF p_expect = 'token' THEN
    IF v_row.token::text <> p_expect_value OR NOT __schema__.is_running(p_topic, v_row.token) THEN
      RETURN QUERY SELECT 0, v_created, v_skipped, v_cancelled, NULL::bigint, v_now, NULL::text, NULL::text, NULL::bigint, NULL::integer; RETURN;
    END IF;
  ELSIF v_row.batch OR v_row.payload IS DISTINCT FROM p_expect_value THEN
    RETURN QUERY SELECT 0, v_created, v_skipped, v_cancelled, NULL::bigint, v_now, NULL::text, NULL::text, NULL::bigint, NULL::integer; RETURN;
  END IF;
  IF v_found AND v_row.batch THEN RETURN QUERY SELECT -3, v_created, v_skipped, v_cancelled, NULL::bigint, v_now, NULL::text, NULL::text, NULL::bigint, NULL::integer; RETURN; END IF;

  -- ---- orphans: the declaration mark (locked, so a beat committing now is seen or waits) ----
  IF p_orphan_grace > 0 THEN
    SELECT m.declared_until INTO v_mark FROM __schema__.series_marks m WHERE m.topic = p_topic AND m.key = p_key FOR UPDATE;
    IF NOT FOUND THEN
      INSERT INTO __schema__.series_marks AS m (topic, key, declared_until) VALUES (p_topic, p_key, v_now + p_orphan_grace)
      ON CONFLICT (topic, key) DO UPDATE SET declared_until = greatest(m.declared_until, excluded.declared_until);
    ELSIF v_mark < v_now THEN
      -- No running instance declares it any more: removed, as removeRecurring would, and nothing else happens.
      DELETE FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = p_key;
      DELETE FROM __schema__.series s WHERE s.topic = p_topic AND s.key = p_key;
      DELETE FROM __schema__.series_runs r WHERE r.topic = p_topic AND r.key = p_key;
      DELETE FROM __schema__.series_marks m WHERE m.topic = p_topic AND m.key = p_key;
      RETURN QUERY SELECT 2, v_created, v_skipped, v_cancelled, NULL::bigint, v_now, NULL::text, NULL::text, NULL::bigint, NULL::integer; RETURN;
    END IF;
  END IF;
  -- ---- end orphans ----

  IF p_check_wake THEN v_earliest := __schema__.earliest_waiting(p_topic); END IF;

  -- No tick yet: arm it first. Two first steps of one series at once (instances
  -- declaring the same schedule at boot) meet on its primary key, and the
  -- second changes nothing, as its condition no longer holds.
  IF p_expect = 'absent' AND p_next IN ('delay', 'at') THEN
    v_at := CASE WHEN p_next = 'at' THEN p_next_value ELSE v_now + p_next_value END;
    INSERT INTO __schema__.actions (topic, member, key, token, due_at, payload, tick)
    VALUES (p_topic, p_key, p_key, nextval('__schema__.tokens'), v_at, p_next_payload, true)
    ON CONFLICT (topic, member) DO NOTHING;
    IF NOT FOUND THEN RETURN QUERY SELECT 0, v_created, v_skipped, v_cancelled, NULL::bigint, v_now, NULL::text, NULL::text, NULL::bigint, NULL::integer; RETURN; END IF;
    v_soonest := v_at;
    v_armed := true;
  END IF;

  -- The previous occurrences still waiting or running (a finished or cancelled one has no row).
  SELECT s.occurrences INTO v_listed FROM __schema__.series s WHERE s.topic = p_topic AND s.key = p_key FOR UPDATE;
  FOREACH v_member IN ARRAY coalesce(v_listed, '{}'::text[]) LOOP
    SELECT a.token, a.attempt, a.due_at INTO v_token, v_attempt, v_due FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = v_member;
    IF FOUND THEN
      v_alive := v_alive || v_member;
      -- The one a refusal names: the first running, else the latest waiting.
      IF v_blocker IS NULL OR v_blocker_state = 'waiting' THEN
        v_blocker := v_member;
        v_blocker_state := CASE WHEN __schema__.is_running(p_topic, v_token) THEN 'running' ELSE 'waiting' END;
        v_blocker_due := v_due;
        v_blocker_attempt := v_attempt;
      END IF;
    END IF;
  END LOOP;

  -- 'skip' and 'bufferOne' refuse while a previous occurrence waits or runs ('bufferOne' never lets two be alive);
  -- given p_while_next, 'bufferOne' holds them back instead: nothing created, the tick re-armed with that.
  v_refused := v_count > 0 AND cardinality(v_alive) > 0 AND p_overlap IN ('skip', 'bufferOne');
  v_held := v_refused AND p_overlap = 'bufferOne' AND p_while_next IS NOT NULL;
  IF v_held THEN
    v_next := p_while_next;
    v_next_value := p_while_value;
    v_next_payload := p_while_payload;
    v_skipped := coalesce(p_while_skipped, '{}');
    v_count := 0;
  END IF;
  IF v_count > 0 AND p_overlap = 'cancelPrevious' THEN
    -- A run going on is not interrupted: its outcome finds no row and changes nothing.
    FOREACH v_member IN ARRAY v_alive LOOP
      DELETE FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = v_member;
      IF FOUND THEN v_cancelled := v_cancelled || v_member; END IF;
    END LOOP;
    v_alive := '{}';
  END IF;

  -- An occurrence key names one instant: it is created once, never over an existing action.
  FOR n IN 1 .. v_count LOOP
    IF v_refused THEN
      v_skipped := v_skipped || p_keys[n];
      CONTINUE;
    END IF;
    v_at := CASE WHEN p_absolute[n] THEN p_values[n] ELSE v_now + p_values[n] END;
    INSERT INTO __schema__.actions (topic, member, key, token, due_at, payload)
    VALUES (p_topic, p_keys[n], p_keys[n], nextval('__schema__.tokens'), v_at, p_payloads[n])
    ON CONFLICT (topic, member) DO NOTHING;
    IF FOUND THEN
      v_created := v_created || p_keys[n];
      v_soonest := least(v_soonest, v_at);
    ELSE
      v_skipped := v_skipped || p_keys[n];
    END IF;
  END LOOP;

  -- An occurrence refused by the overlap policy is the series' last run; its occurrence key is followed by the
  -- blocker, each part after U+001F: state, due time, attempt, key.
  IF v_refused AND cardinality(v_skipped) > 0 THEN
    INSERT INTO __schema__.series_runs AS r (topic, key, outcome, occurrence, started_at, attempt, at)
    VALUES (p_topic, p_key, 'skipped', v_skipped[cardinality(v_skipped)] || chr(31) || v_blocker_state || chr(31) || v_blocker_due::text
      || chr(31) || v_blocker_attempt::text || chr(31) || v_blocker, NULL, 0, v_now)
    ON CONFLICT (topic, key) DO UPDATE SET outcome = excluded.outcome, occurrence = excluded.occurrence, started_at = NULL, attempt = 0, at = excluded.at;
  END IF;

  IF v_next = 'remove' THEN
    DELETE FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = p_key;
    DELETE FROM __schema__.series s WHERE s.topic = p_topic AND s.key = p_key;
    DELETE FROM __schema__.series_runs r WHERE r.topic = p_topic AND r.key = p_key;
    DELETE FROM __schema__.series_marks m WHERE m.topic = p_topic AND m.key = p_key;
  ELSE
    IF v_next IN ('delay', 'at') AND NOT v_armed THEN
      v_at := CASE WHEN v_next = 'at' THEN v_next_value ELSE v_now + v_next_value END;
      -- A run of the tick still going no longer holds it; its outcome will not match the new token.
      UPDATE __schema__.actions a SET token = nextval('__schema__.tokens'), attempt = 1, due_at = v_at,
        payload = v_next_payload, trace = NULL, tick = true
      WHERE a.topic = p_topic AND a.member = p_key;
      v_soonest := least(v_soonest, v_at);
    END IF;
    INSERT INTO __schema__.series AS s (topic, key, occurrences) VALUES (p_topic, p_key, v_alive || v_created)
    ON CONFLICT (topic, key) DO UPDATE SET occurrences = excluded.occurrences;
  END IF;

  IF p_check_wake AND v_soonest IS NOT NULL AND (v_earliest IS NULL OR v_soonest < v_earliest OR __schema__.behind(p_topic, v_earliest, v_soonest, v_now)) THEN
    PERFORM __schema__.wake(p_topic);
  END IF;
  IF NOT v_refused THEN v_blocker := NULL; END IF;
  RETURN QUERY SELECT 1, v_created, v_skipped, v_cancelled, v_soonest, v_now, v_blocker, v_blocker_state, v_blocker_due, v_blocker_attempt;
END
$fn$;

-- advance_series_steps: the steps of many series of one topic, in order,
-- in one transaction, each as advance_series (migration 2) would make it.
-- Per entry, its scalar arguments at its place in the arrays; its
-- occurrences are the next p_counts[n] of the p_occ_* arrays, and the keys
-- bufferOne reports skipped while a previous occurrence is alive the next
-- p_while_counts[n] of p_while_skipped. The caller sends the entries in code
-- point order of their keys, so two statements lock ticks in the same order.
-- Per entry a row, ord its place (1-based), with advance_series's columns.
--
-- The wake: a tick's step (condition 'token', overlap other than
-- 'cancelPrevious') only adds waiting actions (its occurrences, its tick
-- re-armed from running), so the topic's earliest waiting action before it
-- is at most what it was before the statement: measured once, it decides one
-- notification for all such steps, sent if any of them would have sent one
-- alone (at worst one more). Any other step can move or delete waiting
-- actions: it decides its own, as alone, and the earliest is measured again
-- after it.
CREATE FUNCTION __schema__.advance_series_steps(
  p_topic text, p_keys text[], p_expect text[], p_expect_values text[], p_overlap text[],
  p_next text[], p_next_values bigint[], p_next_payloads text[],
  p_counts integer[], p_occ_keys text[], p_occ_absolute boolean[], p_occ_values bigint[], p_occ_payloads text[],
  p_orphan_grace bigint[],
  p_while_next text[], p_while_values bigint[], p_while_payloads text[], p_while_counts integer[], p_while_skipped text[]
) RETURNS TABLE (ord integer, status integer, created text[], skipped text[], cancelled text[], soonest bigint, now_ms bigint,
  blocker text, blocker_state text, blocker_due bigint, blocker_attempt integer)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
  v_occ integer := 0;
  v_while integer := 0;
  v_count integer;
  v_while_count integer;
  v_alone boolean;
  v_measured boolean := false;
  v_earliest bigint;
  v_soonest bigint;
  v_now bigint;
  r record;
BEGIN
  FOR n IN 1 .. coalesce(cardinality(p_keys), 0) LOOP
    v_count := p_counts[n];
    v_while_count := p_while_counts[n];
    v_alone := p_expect[n] <> 'token' OR p_overlap[n] = 'cancelPrevious';
    IF NOT v_alone AND NOT v_measured THEN
      -- None waiting: as late as can be (a later measure cannot be later).
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
  IF v_soonest IS NOT NULL AND (v_soonest < v_earliest OR __schema__.behind(p_topic, v_earliest, v_soonest, v_now)) THEN
    PERFORM __schema__.wake(p_topic);
  END IF;
END
$fn$;
`;
