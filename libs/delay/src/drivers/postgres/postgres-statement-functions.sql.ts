/**
 * Part of migration 1: every statement the driver sends that is more than a
 * call of one of its functions, as a function of the schema's. A statement
 * the driver sends is then `SELECT ... FROM <schema>.<function>($1::pg_catalog.text, ...)`:
 * nothing in it is looked up through the session's search_path, so no
 * function, operator or type another role planted in a schema on that path
 * (`public`, writable by every role on PostgreSQL 14 and older) can stand in
 * for a built-in, on the driver's pool or in the application's transaction.
 * Every function pins its own search_path (pg_catalog, then pg_temp, which
 * PostgreSQL never searches for functions or operators).
 *
 * `__schema__` is replaced by the schema's name; `$n` inside a body are the
 * function's own parameters.
 */
export const STATEMENT_FUNCTIONS_SQL = String.raw`
-- ---- Statements as functions ----------------------------------------------

-- cancel: deletes the key's action (or the closed batch that maxItems filed
-- under it), then reads the clock with the transaction guard (which refuses,
-- and so undoes, a delete that would commit on its own). A key with no action
-- may be being armed for the first time by another open transaction: the
-- probe below waits for it (its INSERT meets that row's uncommitted key), so
-- a cancel applies on top of an arming that commits first, as it does on top
-- of a re-arming. The probe row never commits, and holds nothing.
CREATE FUNCTION __schema__.cancel(p_topic text, p_key text, p_tx_store text)
RETURNS TABLE (removed integer, now_ms bigint) LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
  v_removed integer;
BEGIN
  -- The delete (and its probe) of cancel_each, for one key; the guard after it.
  SELECT e.removed INTO v_removed FROM __schema__.cancel_each(p_topic, ARRAY[p_key]) e;
  RETURN QUERY SELECT v_removed, __schema__.clock_ms(p_tx_store);
END
$fn$;

-- Whether an arming of the key committed after the caller looked and found
-- none: waits for a first-time arming another transaction has not committed
-- yet. True: look again. False: there is none. The placeholder row is
-- inserted in a subtransaction that is rolled back at once when the insert
-- succeeds: nothing is left behind, and the key is not held until the
-- caller's transaction ends (a session arming it meanwhile does not wait).
CREATE FUNCTION __schema__.armed_meanwhile(p_topic text, p_key text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  BEGIN
    INSERT INTO __schema__.actions (topic, member, key, token, due_at)
    VALUES (p_topic, p_key, p_key, 0, 9223372036854775807)
    ON CONFLICT (topic, member) DO NOTHING;
    IF FOUND THEN RAISE EXCEPTION 'no arming in flight' USING ERRCODE = 'NDPR1'; END IF;
  EXCEPTION WHEN SQLSTATE 'NDPR1' THEN
    RETURN false;
  END;
  RETURN true;
END
$fn$;

-- cancel_each: the autocommit cancels of one tick, in call order: per call,
-- how many rows it removed. A row goes to the first call that reaches it, as
-- when the calls run one after the other (a key given twice: the second
-- finds nothing). A key found without an action waits for a first-time
-- arming in flight, as cancel does.
CREATE FUNCTION __schema__.cancel_each(p_topic text, p_keys text[])
RETURNS TABLE (removed integer) LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
  v_counts integer[] := array_fill(0, ARRAY[coalesce(cardinality(p_keys), 0)]);
  v_n integer;
  v_removed integer;
BEGIN
  FOR v_n IN 1 .. coalesce(cardinality(p_keys), 0) LOOP
    LOOP
      DELETE FROM __schema__.actions a WHERE a.topic = p_topic AND (a.member = p_keys[v_n] OR (a.key = p_keys[v_n] AND a.cancel_by_key));
      GET DIAGNOSTICS v_removed = ROW_COUNT;
      EXIT WHEN v_removed > 0 OR NOT __schema__.armed_meanwhile(p_topic, p_keys[v_n]);
    END LOOP;
    v_counts[v_n] := v_removed;
  END LOOP;
  RETURN QUERY SELECT u.c FROM unnest(v_counts) WITH ORDINALITY AS u(c, n) ORDER BY u.n;
END
$fn$;

CREATE FUNCTION __schema__.store_id() RETURNS text LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
  SELECT min(s.id) FROM __schema__.store s
$fn$;

-- get: one action with its state (running: its token in a runs row) and whether the topic is paused. In the
-- application's transaction (p_tx_store, the store's id) its guard runs first, whether or not the key has one.
CREATE FUNCTION __schema__.get(p_topic text, p_member text, p_tx_store text DEFAULT NULL)
RETURNS TABLE (member text, key text, token bigint, attempt integer, due_at bigint, payload text, batch boolean, items text[], trace text, tick boolean,
  state text, paused boolean)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
BEGIN
  IF p_tx_store IS NOT NULL THEN PERFORM __schema__.clock_ms(p_tx_store); END IF;
  RETURN QUERY SELECT a.member::text, a.key::text, a.token, a.attempt, a.due_at, a.payload, a.batch, a.items, a.trace, a.tick,
    CASE WHEN __schema__.is_running(a.topic, a.token) THEN 'running' ELSE 'waiting' END,
    EXISTS (SELECT 1 FROM __schema__.paused_topics p WHERE p.topic = p_topic)
  FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = p_member;
END
$fn$;

-- list: a page of the topic's actions, running ones first, then by due time.
-- A batch shows its first p_items items and its size, not the whole array.
-- The topic's running tokens are read once, not once per row.
CREATE FUNCTION __schema__.list(p_topic text, p_limit integer, p_offset bigint, p_items integer)
RETURNS TABLE (member text, key text, token bigint, attempt integer, due_at bigint, payload text, batch boolean, items text[], size integer, trace text,
  tick boolean, state text, paused boolean)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH running AS MATERIALIZED (SELECT unnest(n.tokens) AS token FROM __schema__.runs n WHERE n.topic = p_topic)
  SELECT a.member::text, a.key::text, a.token, a.attempt, a.due_at, a.payload, a.batch, a.items[1:p_items], cardinality(a.items), a.trace, a.tick,
    CASE WHEN a.token IN (SELECT r.token FROM running r) THEN 'running' ELSE 'waiting' END,
    EXISTS (SELECT 1 FROM __schema__.paused_topics p WHERE p.topic = p_topic)
  FROM __schema__.actions a WHERE a.topic = p_topic
  ORDER BY a.token NOT IN (SELECT r.token FROM running r), a.due_at, a.member LIMIT p_limit OFFSET p_offset;
END
$fn$;

CREATE FUNCTION __schema__.count(p_topic text) RETURNS TABLE (n integer)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  RETURN QUERY SELECT count(*)::integer FROM __schema__.actions a WHERE a.topic = p_topic;
END
$fn$;

CREATE FUNCTION __schema__.list_dead(p_topic text, p_limit integer, p_offset bigint)
RETURNS TABLE (id text, key text, payload text, batch boolean, items text[], due_at bigint, attempts integer, error text, died_at bigint)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
BEGIN
  RETURN QUERY SELECT d.id::text, d.key::text, d.payload, d.batch, d.items, d.due_at, d.attempts, d.error, d.died_at FROM __schema__.dead d
  WHERE d.topic = p_topic ORDER BY d.died_at, d.id LIMIT p_limit OFFSET p_offset;
END
$fn$;

CREATE FUNCTION __schema__.count_dead(p_topic text) RETURNS TABLE (n integer)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  RETURN QUERY SELECT count(*)::integer FROM __schema__.dead d WHERE d.topic = p_topic;
END
$fn$;

-- The addresses of the topic's runs rows named by p_claims whose lease is
-- still running, locked, skipping a row another transaction holds (a claim
-- taking it back, as it expired). Each claim is looked up through the primary
-- key: a runs table holds few live rows, and claim_id = ANY (...) was planned
-- as a read of every row of the topic, dead ones included.
CREATE FUNCTION __schema__.renew_leases(p_topic text, p_claims text[], p_lease bigint)
RETURNS TABLE (claim_id text, members text[], tokens bigint[])
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
  v_now bigint := __schema__.clock_ms(NULL);
BEGIN
  RETURN QUERY
  UPDATE __schema__.runs r SET lease_until = v_now + p_lease
  WHERE r.ctid = ANY (ARRAY(SELECT x.ctid FROM unnest(p_claims) AS c(id),
      LATERAL (SELECT y.ctid FROM __schema__.runs y WHERE y.topic = p_topic AND y.claim_id = c.id AND y.lease_until > v_now OFFSET 0 FOR UPDATE SKIP LOCKED) x))
    AND r.topic = p_topic
  RETURNING r.claim_id::text, r.members::text[], r.tokens;
END
$fn$;

-- recover: claims whose reply was lost, asked again: their leases renewed,
-- the actions they took that still hold their token handed back, same
-- attempt. A lease already expired is not renewed: the next claim takes those
-- runs back (as the next attempt), and this returns nothing of them.
CREATE FUNCTION __schema__.recover(p_topic text, p_claims text[], p_lease bigint)
RETURNS TABLE (claim_id text, member text, key text, token bigint, attempt integer, due_at bigint, payload text, batch boolean, items text[],
  trace text, tick boolean, now_ms bigint)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  SELECT n.claim_id, a.member::text, a.key::text, a.token, a.attempt, a.due_at, a.payload, a.batch, a.items, a.trace, a.tick, __schema__.clock_ms(NULL)
  FROM __schema__.renew_leases(p_topic, p_claims, p_lease) n, unnest(n.members, n.tokens) AS u(member, token), __schema__.actions a
  WHERE a.topic = p_topic AND a.member = u.member AND a.token = u.token;
END
$fn$;

-- extend: renews the leases of the consumer's claims whose runs are not over,
-- and returns the members of the runs going on (p_members, p_tokens) whose row
-- is gone or holds another token (cancelled, re-armed, taken back after the
-- lease ran out): the consumer tells those runs.
CREATE FUNCTION __schema__.extend(p_topic text, p_lease bigint, p_claims text[], p_members text[], p_tokens bigint[])
RETURNS TABLE (member text) LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
BEGIN
  PERFORM 1 FROM __schema__.renew_leases(p_topic, p_claims, p_lease);
  RETURN QUERY SELECT r.member FROM unnest(p_members, p_tokens) AS r(member, token)
  WHERE NOT EXISTS (SELECT 1 FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = r.member AND a.token = r.token);
END
$fn$;

-- finish: deletes the runs rows of the consumer's claims that are over (every outcome recorded), one by one through the primary key.
CREATE FUNCTION __schema__.finish(p_topic text, p_claims text[]) RETURNS TABLE (finished integer)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  v_claim text;
  v_finished integer := 0;
BEGIN
  FOREACH v_claim IN ARRAY coalesce(p_claims, '{}') LOOP
    DELETE FROM __schema__.runs r WHERE r.topic = p_topic AND r.claim_id = v_claim;
    IF FOUND THEN v_finished := v_finished + 1; END IF;
  END LOOP;
  RETURN QUERY SELECT v_finished;
END
$fn$;

-- complete: deletes the completed runs' actions, each only while it still holds the run's token.
CREATE FUNCTION __schema__.complete(p_topic text, p_members text[], p_tokens bigint[]) RETURNS TABLE (completed integer)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  v_completed integer;
BEGIN
  DELETE FROM __schema__.actions a USING unnest(p_members, p_tokens) AS r(member, token)
  WHERE a.topic = p_topic AND a.member = r.member AND a.token = r.token;
  GET DIAGNOSTICS v_completed = ROW_COUNT;
  RETURN QUERY SELECT v_completed;
END
$fn$;

-- retry: re-arms a run that failed under a new token, its next attempt, p_backoff ms from now.
CREATE FUNCTION __schema__.retry(p_topic text, p_member text, p_token bigint, p_backoff bigint) RETURNS TABLE (due_at bigint)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
BEGIN
  RETURN QUERY UPDATE __schema__.actions a SET token = nextval('__schema__.tokens'), attempt = a.attempt + 1, due_at = __schema__.clock_ms(NULL) + p_backoff
  WHERE a.topic = p_topic AND a.member = p_member AND a.token = p_token
  RETURNING a.due_at;
END
$fn$;

-- bury: moves a run that used its last attempt to the dead actions.
CREATE FUNCTION __schema__.bury(p_topic text, p_member text, p_token bigint, p_error text) RETURNS TABLE (buried integer)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  v_buried integer;
BEGIN
  WITH gone AS (DELETE FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = p_member AND a.token = p_token RETURNING a.*)
  INSERT INTO __schema__.dead AS d (topic, id, key, payload, batch, items, due_at, attempts, error, died_at)
  SELECT g.topic, g.member, g.key, g.payload, g.batch, g.items, g.due_at, g.attempt, p_error, __schema__.clock_ms(NULL) FROM gone g
  ON CONFLICT (topic, id) DO UPDATE SET key = excluded.key, payload = excluded.payload, batch = excluded.batch, items = excluded.items,
    due_at = excluded.due_at, attempts = excluded.attempts, error = excluded.error, died_at = excluded.died_at;
  GET DIAGNOSTICS v_buried = ROW_COUNT;
  -- A row only when one was buried (the statement sent is then free of any operator).
  IF v_buried > 0 THEN RETURN QUERY SELECT v_buried; END IF;
END
$fn$;

-- release: at shutdown, runs still going are handed back, same attempt, under
-- a new token (not running: their runs rows name the old one, and go when
-- their lease runs out); every instance is woken.
CREATE FUNCTION __schema__.release(p_topic text, p_members text[], p_tokens bigint[]) RETURNS TABLE (released integer)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  v_released integer;
BEGIN
  -- A row a transactional run still holds is skipped, not waited for: its run ends with its transaction.
  UPDATE __schema__.actions a SET token = nextval('__schema__.tokens')
  WHERE a.ctid = ANY (ARRAY(SELECT x.ctid FROM unnest(p_members, p_tokens) AS r(member, token), __schema__.actions x
      WHERE x.topic = p_topic AND x.member = r.member AND x.token = r.token FOR UPDATE OF x SKIP LOCKED))
    AND a.topic = p_topic;
  GET DIAGNOSTICS v_released = ROW_COUNT;
  IF v_released > 0 THEN PERFORM __schema__.wake(p_topic); END IF;
  RETURN QUERY SELECT v_released;
END
$fn$;

-- pause: a row when the topic was not paused before.
CREATE FUNCTION __schema__.pause(p_topic text) RETURNS TABLE (paused boolean)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  INSERT INTO __schema__.paused_topics (topic, paused_at) VALUES (p_topic, __schema__.clock_ms(NULL)) ON CONFLICT (topic) DO NOTHING;
  IF FOUND THEN RETURN QUERY SELECT true; END IF;
END
$fn$;

-- resume: consumers asleep on a paused topic have no timer armed: they are woken.
CREATE FUNCTION __schema__.resume(p_topic text) RETURNS TABLE (resumed boolean)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  DELETE FROM __schema__.paused_topics p WHERE p.topic = p_topic;
  IF FOUND THEN
    PERFORM __schema__.wake(p_topic);
    RETURN QUERY SELECT true;
  ELSE
    RETURN QUERY SELECT false;
  END IF;
END
$fn$;

CREATE FUNCTION __schema__.is_paused(p_topic text) RETURNS TABLE (paused boolean)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  RETURN QUERY SELECT EXISTS (SELECT 1 FROM __schema__.paused_topics p WHERE p.topic = p_topic);
END
$fn$;

-- run_now: an action that is not running becomes due now. Keeps the token and
-- only moves a row earlier: a runs row's range (its last row) still covers a
-- row a claim took meanwhile.
CREATE FUNCTION __schema__.run_now(p_topic text, p_member text) RETURNS TABLE (found boolean, woke boolean)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
  v_now bigint := __schema__.clock_ms(NULL);
  v_found boolean;
BEGIN
  v_found := EXISTS (SELECT 1 FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = p_member AND NOT __schema__.is_running(p_topic, a.token));
  UPDATE __schema__.actions a SET due_at = v_now
  WHERE a.topic = p_topic AND a.member = p_member AND NOT __schema__.is_running(p_topic, a.token) AND a.due_at > v_now;
  IF FOUND THEN
    PERFORM __schema__.wake(p_topic);
    RETURN QUERY SELECT v_found, true;
  ELSE
    RETURN QUERY SELECT v_found, false;
  END IF;
END
$fn$;

CREATE FUNCTION __schema__.topics()
RETURNS TABLE (topic text, waiting integer, running integer, dead integer, paused boolean)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH t AS (SELECT x.topic FROM __schema__.actions x UNION SELECT y.topic FROM __schema__.dead y UNION SELECT z.topic FROM __schema__.paused_topics z),
    r AS (SELECT a.topic, count(*)::integer AS running FROM __schema__.runs n, unnest(n.members, n.tokens) AS u(member, token), __schema__.actions a
          WHERE a.topic = n.topic AND a.member = u.member AND a.token = u.token GROUP BY a.topic),
    c AS (SELECT a.topic, count(*)::integer AS total FROM __schema__.actions a GROUP BY a.topic),
    d AS (SELECT e.topic, count(*)::integer AS dead FROM __schema__.dead e GROUP BY e.topic)
  SELECT t.topic::text, (coalesce(c.total, 0) - coalesce(r.running, 0))::integer, coalesce(r.running, 0), coalesce(d.dead, 0), p.topic IS NOT NULL
  FROM t LEFT JOIN c ON c.topic = t.topic LEFT JOIN r ON r.topic = t.topic LEFT JOIN d ON d.topic = t.topic
    LEFT JOIN __schema__.paused_topics p ON p.topic = t.topic
  ORDER BY t.topic;
END
$fn$;

CREATE FUNCTION __schema__.topic_health(p_topics text[]) RETURNS TABLE (topic text, now_ms bigint, earliest bigint, paused boolean)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
BEGIN
  RETURN QUERY SELECT t.topic, __schema__.clock_ms(NULL), __schema__.earliest_waiting(t.topic),
    EXISTS (SELECT 1 FROM __schema__.paused_topics p WHERE p.topic = t.topic)
  FROM unnest(p_topics) WITH ORDINALITY AS t(topic, n) ORDER BY t.n;
END
$fn$;

-- ---- outcomes of recurring occurrences: the same, and the schedule's last run ----
-- record_series_runs: the last run of each recurring series among p_members
-- (occurrences whose run started at p_started; null for a run that is no
-- occurrence): outcome, occurrence, start, the attempt that ended. The series
-- key is the member up to U+001E; the latest entry wins when one call records
-- two runs of one series. Only a series that still exists is recorded.
CREATE FUNCTION __schema__.record_series_runs(p_topic text, p_outcome text, p_members text[], p_attempts integer[], p_started bigint[])
RETURNS void LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  INSERT INTO __schema__.series_runs AS x (topic, key, outcome, occurrence, started_at, attempt, at)
  SELECT DISTINCT ON (k.key) p_topic, k.key, p_outcome, k.member, k.started, k.attempt, __schema__.clock_ms(NULL)
  FROM (SELECT g.member, split_part(g.member, chr(30), 1) AS key, g.started, g.attempt, g.n
        FROM unnest(p_members, p_attempts, p_started) WITH ORDINALITY AS g(member, attempt, started, n) WHERE g.started IS NOT NULL) k
  WHERE EXISTS (SELECT 1 FROM __schema__.series e WHERE e.topic = p_topic AND e.key = k.key)
  ORDER BY k.key, k.n DESC
  ON CONFLICT (topic, key) DO UPDATE SET outcome = excluded.outcome, occurrence = excluded.occurrence, started_at = excluded.started_at,
    attempt = excluded.attempt, at = excluded.at;
END
$fn$;

CREATE FUNCTION __schema__.complete_occurrences(p_topic text, p_members text[], p_tokens bigint[], p_started bigint[])
RETURNS TABLE (completed integer) LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  v_members text[];
  v_attempts integer[];
  v_started bigint[];
BEGIN
  WITH gone AS (
    DELETE FROM __schema__.actions a USING unnest(p_members, p_tokens, p_started) WITH ORDINALITY AS r(member, token, started, n)
    WHERE a.topic = p_topic AND a.member = r.member AND a.token = r.token
    RETURNING a.member, a.attempt, r.started, r.n)
  SELECT coalesce(array_agg(g.member ORDER BY g.n), '{}'), coalesce(array_agg(g.attempt ORDER BY g.n), '{}'), coalesce(array_agg(g.started ORDER BY g.n), '{}')
  INTO v_members, v_attempts, v_started FROM gone g;
  PERFORM __schema__.record_series_runs(p_topic, 'succeeded', v_members, v_attempts, v_started);
  RETURN QUERY SELECT cardinality(v_members);
END
$fn$;

CREATE FUNCTION __schema__.retry_occurrence(p_topic text, p_member text, p_token bigint, p_backoff bigint, p_started bigint)
RETURNS TABLE (due_at bigint) LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
  v_due bigint;
  v_attempt integer;
BEGIN
  UPDATE __schema__.actions a SET token = nextval('__schema__.tokens'), attempt = a.attempt + 1, due_at = __schema__.clock_ms(NULL) + p_backoff
  WHERE a.topic = p_topic AND a.member = p_member AND a.token = p_token
  RETURNING a.due_at, a.attempt - 1 INTO v_due, v_attempt;
  IF NOT FOUND THEN RETURN; END IF;
  PERFORM __schema__.record_series_runs(p_topic, 'retrying', ARRAY[p_member], ARRAY[v_attempt], ARRAY[p_started]);
  RETURN QUERY SELECT v_due;
END
$fn$;

CREATE FUNCTION __schema__.bury_occurrence(p_topic text, p_member text, p_token bigint, p_error text, p_started bigint)
RETURNS TABLE (buried integer) LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  v_attempt integer;
BEGIN
  PERFORM __schema__.bury(p_topic, p_member, p_token, p_error);
  SELECT d.attempts INTO v_attempt FROM __schema__.dead d WHERE d.topic = p_topic AND d.id = p_member;
  IF NOT FOUND THEN RETURN; END IF;
  PERFORM __schema__.record_series_runs(p_topic, 'dead', ARRAY[p_member], ARRAY[v_attempt], ARRAY[p_started]);
  RETURN QUERY SELECT 1;
END
$fn$;
-- ---- end outcomes of recurring occurrences ----

-- declare_series: marks the series keys as declared by a running instance
-- for p_ms from now. A mark only moves later. Keys in code point order, once
-- each: two instances declaring the same series lock their rows in the same
-- order (no deadlock).
CREATE FUNCTION __schema__.declare_series(p_topic text, p_keys text[], p_ms bigint) RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  v_now bigint := __schema__.clock_ms(NULL);
BEGIN
  INSERT INTO __schema__.series_marks AS m (topic, key, declared_until)
  SELECT p_topic, k.key, v_now + p_ms FROM (SELECT DISTINCT unnest(p_keys) COLLATE "C" AS key) k ORDER BY k.key
  ON CONFLICT (topic, key) DO UPDATE SET declared_until = excluded.declared_until WHERE m.declared_until < excluded.declared_until;
END
$fn$;

-- last_series_runs: one row per key, in order, all null where none is recorded.
CREATE FUNCTION __schema__.last_series_runs(p_topic text, p_keys text[])
RETURNS TABLE (outcome text, occurrence text, started_at bigint, attempt integer, at bigint)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
BEGIN
  RETURN QUERY SELECT r.outcome, r.occurrence::text, r.started_at, r.attempt, r.at FROM unnest(p_keys) WITH ORDINALITY AS k(key, n)
  LEFT JOIN __schema__.series_runs r ON r.topic = p_topic AND r.key = k.key ORDER BY k.n;
END
$fn$;
-- ---- transactional runs ----
-- begin_run: the first statement of a transactional handler's transaction
-- (p_tx_store: the store's id, checked by the guard). Holds the run's arming,
-- its row under the run's token, until the transaction ends: a cancel or
-- re-arm made meanwhile waits for it and applies on top, and a claim taking
-- back an expired lease skips it. Lock waits in the transaction are bounded
-- by p_lock_timeout ms. False when the arming is gone (cancelled, re-armed,
-- taken back): the run must not go on. p_tx_store null: no guard (the
-- driver's own transaction, begun in the same message).
CREATE FUNCTION __schema__.begin_run(p_topic text, p_member text, p_token bigint, p_tx_store text, p_lock_timeout bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF p_tx_store IS NOT NULL THEN PERFORM __schema__.clock_ms(p_tx_store); END IF;
  PERFORM set_config('lock_timeout', greatest(p_lock_timeout, 1)::text || 'ms', true);
  PERFORM 1 FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = p_member AND a.token = p_token FOR UPDATE;
  RETURN FOUND;
END
$fn$;

-- complete_run: the last statement of a transactional handler's transaction:
-- the run's completion (its row deleted, if the handler did not cancel or
-- re-arm it itself), and a recurring occurrence's last run (p_started not
-- null). It commits with what the handler wrote, or not at all. p_tx_store
-- null: no guard (the driver's own transaction). A one-off action's row is
-- deleted here, by its key, not through complete's arrays.
CREATE FUNCTION __schema__.complete_run(p_topic text, p_member text, p_token bigint, p_started bigint, p_tx_store text) RETURNS integer
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  v_completed integer;
BEGIN
  IF p_tx_store IS NOT NULL THEN PERFORM __schema__.clock_ms(p_tx_store); END IF;
  IF p_started IS NULL THEN
    DELETE FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = p_member AND a.token = p_token;
    GET DIAGNOSTICS v_completed = ROW_COUNT;
    RETURN v_completed;
  END IF;
  RETURN (SELECT c.completed FROM __schema__.complete_occurrences(p_topic, ARRAY[p_member], ARRAY[p_token], ARRAY[p_started]) c);
END
$fn$;
-- ---- end transactional runs ----
-- ---- end statements as functions ----
`;
