/**
 * Migration 2: overlap 'bufferOne' never lets two occurrences of a series be
 * waiting or running at once (it holds one back in the tick's state instead),
 * and a refusal names the previous occurrence that caused it. A new
 * advance_series with four more parameters and four more result columns,
 * beside the one of migration 1 (PostgreSQL tells them apart by their
 * parameters), so an instance of the older code still running in a rolling
 * deploy keeps calling its own. `__schema__` is replaced by the schema's name.
 */
export const MIGRATION_2_SQL = String.raw`
-- advance_series, as in migration 1, and: with 'skip' or 'bufferOne', the
-- occurrences are refused while a previous one waits or runs; given
-- p_while_next ('delay' or 'at', with p_while_value and p_while_payload),
-- 'bufferOne' creates nothing then and re-arms the tick with that instead
-- (its payload names the occurrence held back), reporting p_while_skipped as
-- skipped. blocker (and its state, due time and attempt): the previous
-- occurrence that made the policy refuse (the first running, else the latest
-- waiting), null when none did; a skipped last run names it after its
-- occurrence key.
CREATE FUNCTION __schema__.advance_series(
  p_topic text, p_key text, p_expect text, p_expect_value text, p_overlap text,
  p_next text, p_next_value bigint, p_next_payload text,
  p_keys text[], p_absolute boolean[], p_values bigint[], p_payloads text[],
  p_orphan_grace bigint,
  p_while_next text, p_while_value bigint, p_while_payload text, p_while_skipped text[]
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

  v_earliest := __schema__.earliest_waiting(p_topic);

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

  IF v_soonest IS NOT NULL AND (v_earliest IS NULL OR v_soonest < v_earliest OR __schema__.behind(p_topic, v_earliest, v_soonest, v_now)) THEN
    PERFORM __schema__.wake(p_topic);
  END IF;
  IF NOT v_refused THEN v_blocker := NULL; END IF;
  RETURN QUERY SELECT 1, v_created, v_skipped, v_cancelled, v_soonest, v_now, v_blocker, v_blocker_state, v_blocker_due, v_blocker_attempt;
END
$fn$;
`;
