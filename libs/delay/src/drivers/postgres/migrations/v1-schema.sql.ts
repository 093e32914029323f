import { STATEMENT_FUNCTIONS_SQL } from '../postgres-statement-functions.sql';

/**
 * Migration 1: the tables (actions, runs, dead actions, paused topics,
 * turns, recurring series), the writes, the claim, and the statements as
 * functions. `__schema__` is replaced by the schema's name.
 */
export const MIGRATION_1_SQL = String.raw`
CREATE SCHEMA IF NOT EXISTS __schema__;
CREATE TABLE IF NOT EXISTS __schema__.migrations (
  version integer PRIMARY KEY,
  name text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The store's identity: one row, a random id, made once with the schema. The driver reads it at startup and
-- gives it to each write made in the application's transaction, whose guard (clock_ms) refuses to run where
-- the id differs: a transaction on another database (or server) than the driver's.
CREATE TABLE __schema__.store (id text PRIMARY KEY);
-- random() is seeded from the server's strong random source when each session starts (PostgreSQL 12 has no
-- gen_random_uuid without an extension).
INSERT INTO __schema__.store (id) VALUES (md5(random()::text || random()::text || random()::text || clock_timestamp()::text));

-- Arming tokens: every arming, re-arming, retry and redelivery takes a fresh
-- one, so an outcome reported for an older arming never matches.
CREATE SEQUENCE __schema__.tokens;

-- One row per pending action. A single action and an open batch are filed
-- under their key (member = key); a closed batch under key || U+001F ||
-- its token, zero-padded, so the key is free for the next batch while the
-- closed one runs, retries or dies as one unit.
CREATE TABLE __schema__.actions (
  topic text COLLATE "C" NOT NULL,
  member text COLLATE "C" NOT NULL,
  key text COLLATE "C" NOT NULL,
  token bigint NOT NULL,
  attempt integer NOT NULL DEFAULT 1,
  due_at bigint NOT NULL,
  payload text,
  batch boolean NOT NULL DEFAULT false,
  items text[],
  opened_at bigint,
  -- A batch closed by maxItems that has not started: cancel(key) reaches it.
  cancel_by_key boolean NOT NULL DEFAULT false,
  trace text,
  PRIMARY KEY (topic, member)
);
-- A claim, the earliest due time and the list order are range scans of this.
CREATE INDEX actions_due ON __schema__.actions (topic, due_at, member);
CREATE INDEX actions_closed_batches ON __schema__.actions (topic, key) WHERE cancel_by_key;

-- Runs: one row per claim. A claim leaves the actions it takes as they are
-- (a new version of every claimed row was most of what a drain cost) and
-- names them here, by member and token, under one lease for the claim. An
-- action is running while its token is in a runs row of its topic (tokens
-- are unique). Its outcome deletes it or re-arms it under a new token; the
-- consumer then deletes the run's row. A row whose lease has expired (its
-- instance died or stalled) is taken back by the next claim: the actions it
-- names that still hold their token get a new token and their next attempt.
-- claim_id: a claim whose reply was lost is asked again under its id and
-- hands back what it took, same attempt. last_due, last_member: the last of
-- the rows it took in due order (as filed after the claim). A running row's
-- due time and member never move later while it keeps its token (every re-arm
-- takes a new one; runNow only moves a row earlier), so a claim that scans
-- past a resume point needs only the runs rows that end past it (runs_last):
-- the dead rows of earlier claims, which a long-open transaction keeps from
-- vacuum, are not read again. ticks: it took recurring ticks (claimed from
-- the topic's first row, never from a resume point).
CREATE TABLE __schema__.runs (
  topic text COLLATE "C" NOT NULL,
  claim_id text COLLATE "C" NOT NULL,
  lease_until bigint NOT NULL,
  members text[] COLLATE "C" NOT NULL,
  tokens bigint[] NOT NULL,
  last_due bigint NOT NULL,
  last_member text COLLATE "C" NOT NULL,
  ticks boolean NOT NULL,
  PRIMARY KEY (topic, claim_id)
) WITH (fillfactor = 50);
CREATE INDEX runs_last ON __schema__.runs (topic, last_due, last_member);
CREATE INDEX runs_ticks ON __schema__.runs (topic) WHERE ticks;
-- No index on lease_until: a renewal then rewrites the row in its page (a HOT
-- update) without new index entries. Expired leases are looked for by a scan
-- of the topic's rows, which a draining consumer asks for only in the claims
-- that scan from the topic's first row, about once a second (p_take_back).

-- Whether the arming with this token is running.
CREATE FUNCTION __schema__.is_running(p_topic text, p_token bigint) RETURNS boolean LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
  SELECT EXISTS (SELECT 1 FROM __schema__.runs r WHERE r.topic = p_topic AND p_token = ANY (r.tokens))
$fn$;

-- The earliest due time of the topic's actions that are not running: a
-- write notifies only when it moves this earlier.
CREATE FUNCTION __schema__.earliest_waiting(p_topic text) RETURNS bigint LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
  SELECT min(a.due_at) FROM __schema__.actions a
  WHERE a.topic = p_topic AND a.token NOT IN (SELECT unnest(r.tokens) FROM __schema__.runs r WHERE r.topic = p_topic)
$fn$;

CREATE TABLE __schema__.dead (
  topic text COLLATE "C" NOT NULL,
  id text COLLATE "C" NOT NULL,
  key text COLLATE "C" NOT NULL,
  payload text,
  batch boolean NOT NULL DEFAULT false,
  items text[],
  due_at bigint NOT NULL,
  attempts integer NOT NULL,
  error text NOT NULL,
  died_at bigint NOT NULL,
  PRIMARY KEY (topic, id)
);
CREATE INDEX dead_by_death ON __schema__.dead (topic, died_at, id);

CREATE TABLE __schema__.paused_topics (
  topic text COLLATE "C" PRIMARY KEY,
  paused_at bigint NOT NULL
);

-- Turns: the claims of a topic take turns by locking the topic's row here
-- (see the claim). A row lock of a table of the driver's own schema: no role
-- without UPDATE on it can take it, where an advisory lock is any role's to
-- take (and so to hold, stalling the topic).
CREATE TABLE __schema__.turns (
  topic text COLLATE "C" PRIMARY KEY
);

-- Wake-ups. A write that makes a topic's earliest due time earlier notifies
-- the channel named after the schema. Any role may LISTEN to a channel, and
-- NOTIFY it, so a notification carries only a tag of the topic: the first 16
-- hex digits of md5(id || topic), where the id is the store's (its table above), a
-- random value only the driver's roles can read. An instance wakes the consumer of the topic whose
-- tag it is; no due time is sent (the claim it makes tells it), and a flood of
-- notifications (forged or replayed) costs each instance a bounded number of
-- claims (the consumer spaces out wakes that found nothing new).
CREATE FUNCTION __schema__.wake_tag(p_topic text) RETURNS text LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
  SELECT left(md5(s.id || p_topic), 16) FROM __schema__.store s LIMIT 1
$fn$;

CREATE FUNCTION __schema__.wake(p_topic text) RETURNS void LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  PERFORM pg_notify('__schema__', __schema__.wake_tag(p_topic));
END
$fn$;

-- Whether a write due at p_at into a topic whose earliest waiting action is
-- p_earliest must wake its consumers though it does not move that earlier:
-- the earliest is already due (a row held by another transaction, or a
-- backlog: the consumer may be backing off for up to a second), the new
-- action is due within that second, and the topic is not paused. Kept that
-- narrow: a notification takes a database-wide lock at commit.
CREATE FUNCTION __schema__.behind(p_topic text, p_earliest bigint, p_at bigint, p_now bigint) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
  SELECT p_earliest <= p_now AND p_at < p_now + 1000 AND NOT EXISTS (SELECT 1 FROM __schema__.paused_topics p WHERE p.topic = p_topic)
$fn$;

-- The tags of the topics an instance consumes, read at its start.
CREATE FUNCTION __schema__.wake_tags(p_topics text[]) RETURNS TABLE (topic text, tag text)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
  SELECT t.topic, __schema__.wake_tag(t.topic) FROM unnest(p_topics) AS t(topic)
$fn$;

-- The database's time in ms. Given the store's id (p_tx_store: a write in
-- the application's transaction; null on the driver's own connections), it
-- also refuses to run outside a transaction block: a statement sent without parameters (the
-- simple query protocol) in autocommit has now() = statement_timestamp(),
-- while inside BEGIN ... every statement after BEGIN starts later than its
-- transaction. A write meant for the application's transaction then fails
-- instead of committing on its own. And it refuses to run where the store
-- has another id: a transaction on another database that has this schema
-- too, where the write would commit and never fire for the driver.
CREATE FUNCTION __schema__.clock_ms(p_tx_store text) RETURNS bigint LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF p_tx_store IS NOT NULL AND now() = statement_timestamp() THEN
    RAISE EXCEPTION 'nestjs-delay: the transaction passed in is not open; this write would have committed on its own' USING ERRCODE = 'NDTX1';
  END IF;
  IF p_tx_store IS NOT NULL AND NOT EXISTS (SELECT 1 FROM __schema__.store s WHERE s.id = p_tx_store) THEN
    RAISE EXCEPTION 'nestjs-delay: the transaction passed in is on another database than the driver''s' USING ERRCODE = 'NDDB1';
  END IF;
  RETURN floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
END
$fn$;

-- schedule and scheduleMany: entries in order, each as one schedule call
-- would be (a key given twice sees its first arming). All or nothing: every
-- entry is checked before any is written, and the first refusal returns
-- alone (status -1 too far in the past, -2 beyond the horizon, -3 the key
-- has an open batch; attempt = the entry's position). Otherwise one row per
-- entry: status 1 created, 2 replaced, 3 kept and waiting, 4 kept and
-- running. Notifies the wake channel once, when the earliest new due time
-- is earlier than the topic's earliest before: that is when a sleeping
-- consumer must wake sooner (a notification costs a lock at commit).
CREATE FUNCTION __schema__.schedule(
  p_topic text, p_keys text[], p_absolute boolean[], p_values bigint[], p_payloads text[], p_keep boolean[], p_traces text[],
  p_max_past bigint, p_horizon bigint, p_tx_store text
) RETURNS TABLE (status integer, due_at bigint, payload text, attempt integer, now_ms bigint)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  v_now bigint := __schema__.clock_ms(p_tx_store);
  v_count integer := coalesce(cardinality(p_keys), 0);
  v_at bigint;
  v_earliest bigint;
  v_soonest bigint;
  v_row __schema__.actions%ROWTYPE;
  v_created boolean;
BEGIN
  FOR n IN 1 .. v_count LOOP
    v_at := CASE WHEN p_absolute[n] THEN p_values[n] ELSE v_now + p_values[n] END;
    IF v_at < 0 OR v_at < v_now - p_max_past THEN
      RETURN QUERY SELECT -1, v_at, NULL::text, n, v_now; RETURN;
    ELSIF v_at > v_now + p_horizon THEN
      RETURN QUERY SELECT -2, v_at, NULL::text, n, v_now; RETURN;
    ELSIF EXISTS (SELECT 1 FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = p_keys[n] AND a.batch) THEN
      RETURN QUERY SELECT -3, v_at, NULL::text, n, v_now; RETURN;
    END IF;
  END LOOP;
  v_earliest := __schema__.earliest_waiting(p_topic);
  FOR n IN 1 .. v_count LOOP
    v_at := CASE WHEN p_absolute[n] THEN p_values[n] ELSE v_now + p_values[n] END;
    IF p_keep[n] THEN
      -- Under READ COMMITTED each statement sees its own snapshot: the row the
      -- INSERT met may be deleted and committed (run, cancelled) before the
      -- SELECT reads it. Then the key is free again, and the INSERT is retried.
      LOOP
        INSERT INTO __schema__.actions AS a (topic, member, key, token, due_at, payload, trace)
        VALUES (p_topic, p_keys[n], p_keys[n], nextval('__schema__.tokens'), v_at, p_payloads[n], p_traces[n])
        ON CONFLICT (topic, member) DO NOTHING;
        IF FOUND THEN
          v_soonest := least(v_soonest, v_at);
          RETURN QUERY SELECT 1, v_at, p_payloads[n], 1, v_now;
          EXIT;
        END IF;
        SELECT * INTO v_row FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = p_keys[n];
        CONTINUE WHEN NOT FOUND;
        IF v_row.batch THEN
          RAISE EXCEPTION 'nestjs-delay: key % of topic % has an open batch', p_keys[n], p_topic USING ERRCODE = 'NDKC1';
        END IF;
        RETURN QUERY SELECT CASE WHEN __schema__.is_running(p_topic, v_row.token) THEN 4 ELSE 3 END, v_row.due_at, v_row.payload, v_row.attempt, v_now;
        EXIT;
      END LOOP;
    ELSE
      -- A run of the previous arming may be going on: the new token is not running, and the run's outcome will not match it.
      INSERT INTO __schema__.actions AS a (topic, member, key, token, due_at, payload, trace)
      VALUES (p_topic, p_keys[n], p_keys[n], nextval('__schema__.tokens'), v_at, p_payloads[n], p_traces[n])
      ON CONFLICT (topic, member) DO UPDATE SET token = excluded.token, attempt = 1, due_at = excluded.due_at,
        payload = excluded.payload, trace = excluded.trace
      WHERE NOT a.batch
      RETURNING (a.xmax = 0) INTO v_created;
      IF NOT FOUND THEN
        RAISE EXCEPTION 'nestjs-delay: key % of topic % has an open batch', p_keys[n], p_topic USING ERRCODE = 'NDKC1';
      END IF;
      v_soonest := least(v_soonest, v_at);
      RETURN QUERY SELECT CASE WHEN v_created THEN 1 ELSE 2 END, v_at, p_payloads[n], 1, v_now;
    END IF;
  END LOOP;
  IF v_soonest IS NOT NULL AND (v_earliest IS NULL OR v_soonest < v_earliest OR __schema__.behind(p_topic, v_earliest, v_soonest, v_now)) THEN
    PERFORM __schema__.wake(p_topic);
  END IF;
END
$fn$;

-- reschedule: moves an existing action, keeping payload and attempt, under a
-- new token (a run going on no longer holds it). Status 1 moved, 0 none, -1/-2
-- out of range, -3 the key is an open batch.
CREATE FUNCTION __schema__.reschedule(
  p_topic text, p_key text, p_absolute boolean, p_value bigint, p_max_past bigint, p_horizon bigint, p_tx_store text
) RETURNS TABLE (status integer, due_at bigint, payload text, attempt integer, now_ms bigint)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  v_now bigint := __schema__.clock_ms(p_tx_store);
  v_at bigint := CASE WHEN p_absolute THEN p_value ELSE v_now + p_value END;
  v_row __schema__.actions%ROWTYPE;
  v_earliest bigint;
BEGIN
  -- A key with no action may be being armed for the first time by another open transaction: armed_meanwhile waits
  -- for it, and the reschedule applies on top of it once it commits (as it does on top of a re-arming).
  LOOP
    SELECT * INTO v_row FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = p_key FOR UPDATE;
    EXIT WHEN FOUND;
    IF NOT __schema__.armed_meanwhile(p_topic, p_key) THEN RETURN QUERY SELECT 0, v_at, NULL::text, 0, v_now; RETURN; END IF;
  END LOOP;
  IF v_row.batch THEN RETURN QUERY SELECT -3, v_at, NULL::text, 0, v_now; RETURN; END IF;
  IF v_at < 0 OR v_at < v_now - p_max_past THEN RETURN QUERY SELECT -1, v_at, NULL::text, 0, v_now; RETURN; END IF;
  IF v_at > v_now + p_horizon THEN RETURN QUERY SELECT -2, v_at, NULL::text, 0, v_now; RETURN; END IF;
  v_earliest := __schema__.earliest_waiting(p_topic);
  UPDATE __schema__.actions a SET due_at = v_at, token = nextval('__schema__.tokens') WHERE a.topic = p_topic AND a.member = p_key;
  IF v_earliest IS NULL OR v_at < v_earliest OR __schema__.behind(p_topic, v_earliest, v_at, v_now) THEN PERFORM __schema__.wake(p_topic); END IF;
  RETURN QUERY SELECT 1, v_at, v_row.payload, v_row.attempt, v_now;
END
$fn$;

-- collect: appends an item to the key's open batch, opening one if there is
-- none. A full batch closes at once: re-filed under its own id, due now, so
-- the next item opens a new batch. Status 1 opened, 2 joined, 3 flushed,
-- -3 the key has a single action pending, -4 the item would take the open
-- batch past p_max_bytes (-1: no cap; size is then the batch's item count
-- and due_at the bytes it would have held). A batch's bytes count each
-- item as the Redis driver stores it, "<bytes>:<json>", so the cap means
-- the same on every driver; the item that opens a batch is always taken.
CREATE FUNCTION __schema__.collect(
  p_topic text, p_key text, p_item text, p_window bigint, p_max_wait bigint, p_slide boolean, p_max_items integer, p_trace text, p_tx_store text,
  p_max_bytes bigint
) RETURNS TABLE (status integer, size integer, due_at bigint, now_ms bigint)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  v_now bigint := __schema__.clock_ms(p_tx_store);
  v_row __schema__.actions%ROWTYPE;
  v_earliest bigint;
  v_status integer;
  v_size integer;
  v_at bigint;
  v_token bigint;
  v_opened bigint;
  v_member text;
BEGIN
  v_earliest := __schema__.earliest_waiting(p_topic);
  LOOP
    SELECT * INTO v_row FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = p_key FOR UPDATE;
    IF FOUND THEN
      IF NOT v_row.batch THEN RETURN QUERY SELECT -3, 0, 0::bigint, v_now; RETURN; END IF;
      IF p_max_bytes >= 0 THEN
        SELECT coalesce(sum(octet_length(i) + length(octet_length(i)::text) + 1), 0)
          + octet_length(p_item) + length(octet_length(p_item)::text) + 1
          INTO v_at FROM unnest(v_row.items) i;
        IF v_at > p_max_bytes THEN RETURN QUERY SELECT -4, coalesce(cardinality(v_row.items), 0), v_at, v_now; RETURN; END IF;
      END IF;
      v_status := 2;
      v_size := coalesce(cardinality(v_row.items), 0) + 1;
      v_token := v_row.token;
      v_opened := v_row.opened_at;
      v_at := v_row.due_at;
      IF p_slide THEN
        v_at := v_now + p_window;
        IF p_max_wait >= 0 AND v_opened + p_max_wait < v_at THEN v_at := v_opened + p_max_wait; END IF;
      END IF;
    ELSE
      v_status := 1;
      v_size := 1;
      v_token := nextval('__schema__.tokens');
      v_opened := v_now;
      v_at := v_now + p_window;
      IF p_max_wait >= 0 AND v_now + p_max_wait < v_at THEN v_at := v_now + p_max_wait; END IF;
    END IF;
    v_member := p_key;
    IF v_size >= p_max_items THEN
      v_member := p_key || chr(31) || lpad(v_token::text, 20, '0');
      v_at := v_now;
      v_status := 3;
    END IF;
    IF v_status = 1 OR (v_status = 3 AND v_size = 1) THEN
      INSERT INTO __schema__.actions (topic, member, key, token, due_at, batch, items, opened_at, cancel_by_key, trace)
      VALUES (p_topic, v_member, p_key, v_token, v_at, true, ARRAY[p_item], v_opened, v_status = 3, p_trace)
      ON CONFLICT (topic, member) DO NOTHING;
      -- Another writer opened the key's batch meanwhile: join it instead.
      CONTINUE WHEN NOT FOUND;
    ELSE
      -- Keeps the token: an open batch is never running (its claim re-files it), which the runs rows' ranges rely on.
      UPDATE __schema__.actions a SET member = v_member, items = a.items || p_item, due_at = v_at, cancel_by_key = v_status = 3
      WHERE a.topic = p_topic AND a.member = p_key;
    END IF;
    EXIT;
  END LOOP;
  IF v_earliest IS NULL OR v_at < v_earliest OR __schema__.behind(p_topic, v_earliest, v_at, v_now) THEN PERFORM __schema__.wake(p_topic); END IF;
  RETURN QUERY SELECT v_status, v_size, v_at, v_now;
END
$fn$;

-- redrive: a dead action back, due now, attempt 1, under a new token. A
-- single action replaces one pending for its key; a batch comes back as the
-- closed unit it was, under its own id. 1 re-driven, 0 none, -3 a single
-- action whose key has an open batch (nothing changes).
CREATE FUNCTION __schema__.redrive(p_topic text, p_id text) RETURNS integer LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  v_now bigint := __schema__.clock_ms(NULL);
  v_dead __schema__.dead%ROWTYPE;
BEGIN
  SELECT * INTO v_dead FROM __schema__.dead d WHERE d.topic = p_topic AND d.id = p_id FOR UPDATE;
  IF NOT FOUND THEN RETURN 0; END IF;
  IF NOT v_dead.batch AND EXISTS (SELECT 1 FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = p_id AND a.batch) THEN RETURN -3; END IF;
  DELETE FROM __schema__.dead d WHERE d.topic = p_topic AND d.id = p_id;
  INSERT INTO __schema__.actions AS a (topic, member, key, token, due_at, payload, batch, items, opened_at)
  VALUES (p_topic, p_id, v_dead.key, nextval('__schema__.tokens'), v_now, v_dead.payload, v_dead.batch, v_dead.items, CASE WHEN v_dead.batch THEN v_now END)
  ON CONFLICT (topic, member) DO UPDATE SET token = excluded.token, attempt = 1, due_at = excluded.due_at,
    payload = excluded.payload, batch = excluded.batch, items = excluded.items, opened_at = excluded.opened_at, cancel_by_key = false, trace = NULL;
  PERFORM __schema__.wake(p_topic);
  RETURN 1;
END
$fn$;

-- ---- Recurring actions ---------------------------------------------------
-- (Kept in a block of its own: the one atomic step of a recurring series,
-- advanceSeries, what the claim needs to take ticks without a slot, the
-- series' last runs and their declaration marks.)

-- A series' tick is an ordinary action under the series key, marked here: a
-- claim takes due ticks besides its handler slots, so long handlers cannot
-- hold a schedule back. The mark stays through retries, lease expiries,
-- releases and moves, so a tick never waits for a slot.
ALTER TABLE __schema__.actions ADD COLUMN tick boolean NOT NULL DEFAULT false;
CREATE INDEX actions_due_ticks ON __schema__.actions (topic, due_at, member) WHERE tick;

-- One row per series: the keys of its occurrences that may still be waiting
-- or running, in creation order; pruned of those that finished or were
-- cancelled at each step of the series.
CREATE TABLE __schema__.series (
  topic text COLLATE "C" NOT NULL,
  key text COLLATE "C" NOT NULL,
  occurrences text[] COLLATE "C" NOT NULL DEFAULT '{}',
  PRIMARY KEY (topic, key)
);

-- ---- Recurring: last runs and declaration marks ----
-- The last run of each series: written by the statement that records an
-- occurrence's outcome (complete, retry, bury: no round trip of its own), and
-- by advance_series for an occurrence the overlap policy refused ('skipped',
-- no start, attempt 0). Only while the series exists: a removed series has no
-- row here, and an occurrence finishing after its removal records nothing.
CREATE TABLE __schema__.series_runs (
  topic text COLLATE "C" NOT NULL,
  key text COLLATE "C" NOT NULL,
  outcome text NOT NULL CHECK (outcome IN ('succeeded', 'retrying', 'dead', 'skipped')),
  occurrence text COLLATE "C" NOT NULL,
  started_at bigint,
  attempt integer NOT NULL,
  at bigint NOT NULL,
  PRIMARY KEY (topic, key)
);

-- Until when a running instance declares a series in code (declareSeries,
-- every third of the orphan grace); a mark only moves later. advance_series,
-- given a grace, removes a series whose mark has passed: no running instance
-- declares it any more.
CREATE TABLE __schema__.series_marks (
  topic text COLLATE "C" NOT NULL,
  key text COLLATE "C" NOT NULL,
  declared_until bigint NOT NULL,
  PRIMARY KEY (topic, key)
);
-- ---- end last runs and declaration marks ----

-- advance_series: the one atomic step of a recurring series (the
-- advanceSeries contract in delay-driver.interface.ts). Applied only if
-- p_expect holds: 'token' (the tick is running under that token), 'payload'
-- (the tick's payload is p_expect_value) or 'absent' (no action under the
-- series key). Then the overlap policy is checked against the series' live
-- occurrences, each occurrence is created unless an action has its key, the
-- previous ones are cancelled for 'cancelPrevious', and the tick is re-armed
-- under a new token (p_next 'delay' or 'at'), removed with the series' row
-- ('remove') or left ('keep'). With p_orphan_grace > 0 (a series declared in
-- code, orphan policy 'remove'), a series whose declaration mark has passed is
-- removed instead (tick, series row, last run, mark: status 2), and a series
-- without a mark gets one that far ahead. Status 1 applied, 0 the condition
-- did not hold (nothing changed), -3 the series key holds a batch. Notifies
-- the wake channel once, when the earliest new due time is earlier than the
-- topic's earliest before, as schedule does.
CREATE FUNCTION __schema__.advance_series(
  p_topic text, p_key text, p_expect text, p_expect_value text, p_overlap text,
  p_next text, p_next_value bigint, p_next_payload text,
  p_keys text[], p_absolute boolean[], p_values bigint[], p_payloads text[],
  p_orphan_grace bigint
) RETURNS TABLE (status integer, created text[], skipped text[], cancelled text[], soonest bigint, now_ms bigint)
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
  v_alive text[] := '{}';
  v_waiting boolean := false;
  v_refused boolean;
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
    IF v_found THEN RETURN QUERY SELECT 0, v_created, v_skipped, v_cancelled, NULL::bigint, v_now; RETURN; END IF;
  ELSIF NOT v_found THEN
    RETURN QUERY SELECT 0, v_created, v_skipped, v_cancelled, NULL::bigint, v_now; RETURN;
  ELSIF p_expect = 'token' THEN
    IF v_row.token::text <> p_expect_value OR NOT __schema__.is_running(p_topic, v_row.token) THEN
      RETURN QUERY SELECT 0, v_created, v_skipped, v_cancelled, NULL::bigint, v_now; RETURN;
    END IF;
  ELSIF v_row.batch OR v_row.payload IS DISTINCT FROM p_expect_value THEN
    RETURN QUERY SELECT 0, v_created, v_skipped, v_cancelled, NULL::bigint, v_now; RETURN;
  END IF;
  IF v_found AND v_row.batch THEN RETURN QUERY SELECT -3, v_created, v_skipped, v_cancelled, NULL::bigint, v_now; RETURN; END IF;

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
      RETURN QUERY SELECT 2, v_created, v_skipped, v_cancelled, NULL::bigint, v_now; RETURN;
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
    IF NOT FOUND THEN RETURN QUERY SELECT 0, v_created, v_skipped, v_cancelled, NULL::bigint, v_now; RETURN; END IF;
    v_soonest := v_at;
    v_armed := true;
  END IF;

  -- The previous occurrences still waiting or running (a finished or cancelled one has no row).
  SELECT s.occurrences INTO v_listed FROM __schema__.series s WHERE s.topic = p_topic AND s.key = p_key FOR UPDATE;
  FOREACH v_member IN ARRAY coalesce(v_listed, '{}'::text[]) LOOP
    SELECT a.token INTO v_token FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = v_member;
    IF FOUND THEN
      v_alive := v_alive || v_member;
      IF NOT __schema__.is_running(p_topic, v_token) THEN v_waiting := true; END IF;
    END IF;
  END LOOP;

  v_refused := v_count > 0 AND ((p_overlap = 'skip' AND cardinality(v_alive) > 0) OR (p_overlap = 'bufferOne' AND v_waiting));
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

  -- An occurrence refused by the overlap policy is the series' last run.
  IF v_refused THEN
    INSERT INTO __schema__.series_runs AS r (topic, key, outcome, occurrence, started_at, attempt, at)
    VALUES (p_topic, p_key, 'skipped', p_keys[v_count], NULL, 0, v_now)
    ON CONFLICT (topic, key) DO UPDATE SET outcome = excluded.outcome, occurrence = excluded.occurrence, started_at = NULL, attempt = 0, at = excluded.at;
  END IF;

  IF p_next = 'remove' THEN
    DELETE FROM __schema__.actions a WHERE a.topic = p_topic AND a.member = p_key;
    DELETE FROM __schema__.series s WHERE s.topic = p_topic AND s.key = p_key;
    DELETE FROM __schema__.series_runs r WHERE r.topic = p_topic AND r.key = p_key;
    DELETE FROM __schema__.series_marks m WHERE m.topic = p_topic AND m.key = p_key;
  ELSE
    IF p_next IN ('delay', 'at') AND NOT v_armed THEN
      v_at := CASE WHEN p_next = 'at' THEN p_next_value ELSE v_now + p_next_value END;
      -- A run of the tick still going no longer holds it; its outcome will not match the new token.
      UPDATE __schema__.actions a SET token = nextval('__schema__.tokens'), attempt = 1, due_at = v_at,
        payload = p_next_payload, trace = NULL, tick = true
      WHERE a.topic = p_topic AND a.member = p_key;
      v_soonest := least(v_soonest, v_at);
    END IF;
    INSERT INTO __schema__.series AS s (topic, key, occurrences) VALUES (p_topic, p_key, v_alive || v_created)
    ON CONFLICT (topic, key) DO UPDATE SET occurrences = excluded.occurrences;
  END IF;

  IF v_soonest IS NOT NULL AND (v_earliest IS NULL OR v_soonest < v_earliest OR __schema__.behind(p_topic, v_earliest, v_soonest, v_now)) THEN
    PERFORM __schema__.wake(p_topic);
  END IF;
  RETURN QUERY SELECT 1, v_created, v_skipped, v_cancelled, v_soonest, v_now;
END
$fn$;

-- ---- The claim ---------------------------------------------------------
-- claim: what a consumer takes, in one call. In order:
-- 1. The completions it carries (p_done_members, p_done_tokens: its runs that
--    completed since its last call) are deleted. If one is held by another
--    transaction (yours, cancelling or re-arming that key), none is: the claim
--    waits at most 1 ms on a lock, and completed = 0 tells the consumer to send
--    them with the complete statement, which waits as any write does.
-- 2. The runs rows of its claims that are over (p_finished: every outcome
--    recorded) are deleted; finished counts them. A claim with an outcome that
--    could not be recorded is not sent: its row's lease runs out, as in 3.
-- 3. When p_take_back, runs rows whose lease expired (their instance died or
--    stalled) are taken back: the actions they name that still hold their
--    token get a new token and their next attempt (revived), and are
--    claimable at once. Rows another transaction holds, and carried
--    completions, are left (and so is the runs row, for a later claim). The
--    look reads every runs row of the topic, so a draining consumer asks for
--    it once a second, not in every claim.
-- 4. From here to its commit, the claims of one topic take turns (the lock
--    of the topic's row in turns, which no role without UPDATE on it can take). A claim writes nothing to the rows it
--    takes, so nothing on them stops a claim whose snapshot was taken before
--    another claim committed from taking them again; each statement of this
--    function takes its snapshot after the lock (READ COMMITTED: refused under
--    another isolation level, which would keep the first snapshot). The turn
--    is waited for at most p_turn_wait ms: then the claim takes nothing and
--    says busy (steps 1 to 3 stand), and the consumer looks again shortly.
-- 5. Up to p_limit due actions that are not running, earliest first (from
--    past p_resume, see the claim statement; only the runs rows that end past
--    it can name them), and up to p_ticks due recurring ticks besides them
--    (only runs rows with ticks can name those), are locked, skipping rows another transaction holds
--    (a cancel or re-arm committed meanwhile is seen in the row's newest
--    version), and recorded in one runs row under the claim's lease. An open
--    batch is closed as it is claimed: re-filed under its own id, and
--    cancel(key) no longer reaches it; batches are the only rows written.
-- The first row is the head (member null), describing the claim; then one
-- row per action taken (head columns null). next_at is the
-- earliest due time after now or lease to expire, to sleep until (null when
-- the claim is full: the consumer claims again at once); more_due says due
-- actions were left (true when full); next_tick and more_ticks the same for
-- ticks; last_due and last_member the last row picked, in pick order (the
-- consumer's next resume point). now_ms is the clock when the call started:
-- what was due then is what it takes (the lease runs from its turn).
CREATE FUNCTION __schema__.claim(
  p_topic text, p_limit integer, p_lease bigint, p_claim_id text, p_ticks integer, p_resume bigint, p_resume_member text,
  p_done_members text[], p_done_tokens bigint[], p_finished text[], p_turn_wait bigint, p_take_back boolean
) RETURNS TABLE (
  now_ms bigint, revived integer, paused boolean, completed integer, finished integer, next_at bigint, more_due boolean,
  next_tick bigint, more_ticks boolean, busy boolean, last_due bigint, last_member text,
  member text, key text, token bigint, attempt integer, due_at bigint, payload text, batch boolean, items text[], trace text, tick boolean
) LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
  -- The clock when the call started: what is due, and what the consumer's clock offset is measured against.
  v_now bigint := __schema__.clock_ms(NULL);
  -- Read again after the turn: the lease runs from there, however long the turn took.
  v_turn bigint;
  v_completed integer := 0;
  v_finished integer := 0;
  v_revived integer := 0;
  v_paused boolean;
  v_lock_timeout text := current_setting('lock_timeout');
  v_expired text[];
  v_claim text;
BEGIN
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'nestjs-delay: a claim must run under READ COMMITTED, this connection runs under %', current_setting('transaction_isolation')
      USING ERRCODE = 'NDIS1', HINT = 'set default_transaction_isolation to ''read committed'' for the role or database the driver connects as';
  END IF;
  IF cardinality(p_done_tokens) > 0 THEN
    -- Deleted directly (locking the rows first, to skip a held one, cost a third of the claim), under a lock
    -- timeout of 1 ms; a timeout undoes the block's delete (and its setting), and the claim goes on.
    BEGIN
      PERFORM set_config('lock_timeout', '1ms', true);
      WITH gone AS (
        DELETE FROM __schema__.actions a USING unnest(p_done_members, p_done_tokens) AS r(member, token)
        WHERE a.topic = p_topic AND a.member = r.member AND a.token = r.token
        RETURNING 1)
      SELECT count(*) INTO v_completed FROM gone;
      PERFORM set_config('lock_timeout', v_lock_timeout, true);
    EXCEPTION WHEN lock_not_available THEN
      v_completed := 0;
    END;
  END IF;
  IF cardinality(p_finished) > 0 THEN
    -- One by one, through the primary key. A runs table holds few live rows, so its statistics make any plan look
    -- cheap: claim_id = ANY (...) was planned as a read of every row of the topic, dead ones included (and a
    -- long-open transaction keeps thousands of them).
    FOREACH v_claim IN ARRAY p_finished LOOP
      DELETE FROM __schema__.runs r WHERE r.topic = p_topic AND r.claim_id = v_claim;
      IF FOUND THEN v_finished := v_finished + 1; END IF;
    END LOOP;
  END IF;
  IF p_take_back AND EXISTS (SELECT 1 FROM __schema__.runs r WHERE r.topic = p_topic AND r.lease_until <= v_now) THEN
    -- The expired runs rows are locked first. A renewal or a recovery of the same claim renews only a lease still
    -- running and skips a locked row: whichever locks the row first wins, and the other leaves it.
    SELECT coalesce(array_agg(e.claim_id), '{}') INTO v_expired FROM (
      SELECT r.claim_id FROM __schema__.runs r WHERE r.topic = p_topic AND r.lease_until <= v_now
      ORDER BY r.lease_until LIMIT 100 FOR UPDATE SKIP LOCKED) e;
    WITH back AS (
      UPDATE __schema__.actions a SET token = nextval('__schema__.tokens'), attempt = a.attempt + 1
      WHERE a.ctid = ANY (ARRAY(
          SELECT x.ctid FROM __schema__.runs r, unnest(r.members, r.tokens) AS u(member, token), __schema__.actions x
          WHERE r.topic = p_topic AND r.claim_id = ANY (v_expired) AND x.topic = p_topic AND x.member = u.member AND x.token = u.token
            AND NOT (u.token = ANY (p_done_tokens))
          FOR UPDATE OF x SKIP LOCKED))
        AND a.topic = p_topic
      RETURNING 1)
    SELECT count(*) INTO v_revived FROM back;
    DELETE FROM __schema__.runs r WHERE r.topic = p_topic AND r.claim_id = ANY (v_expired)
      AND NOT EXISTS (SELECT 1 FROM unnest(r.members, r.tokens) AS u(member, token)
                      JOIN __schema__.actions a ON a.topic = p_topic AND a.member = u.member AND a.token = u.token);
  END IF;
  -- The turn, waited for at most p_turn_wait ms (less than the call's timeout, so the consumer is never left asking
  -- about a claim still waiting on the server). Not had: this claim takes nothing (busy), and what came before stands.
  BEGIN
    PERFORM set_config('lock_timeout', greatest(p_turn_wait, 1)::text || 'ms', true);
    PERFORM 1 FROM __schema__.turns t WHERE t.topic = p_topic FOR UPDATE;
    IF NOT FOUND THEN
      -- The topic's first claim: its row is made (claims meeting here wait on its key), then locked.
      INSERT INTO __schema__.turns (topic) VALUES (p_topic) ON CONFLICT (topic) DO NOTHING;
      PERFORM 1 FROM __schema__.turns t WHERE t.topic = p_topic FOR UPDATE;
    END IF;
    PERFORM set_config('lock_timeout', v_lock_timeout, true);
  EXCEPTION WHEN lock_not_available THEN
    RETURN QUERY SELECT v_now, v_revived, false, v_completed, v_finished, NULL::bigint, true, NULL::bigint, false, true, NULL::bigint, NULL::text,
      NULL::text, NULL::text, NULL::bigint, NULL::integer, NULL::bigint, NULL::text, NULL::boolean, NULL::text[], NULL::text, NULL::boolean;
    RETURN;
  END;
  v_turn := __schema__.clock_ms(NULL);
  v_paused := EXISTS (SELECT 1 FROM __schema__.paused_topics p WHERE p.topic = p_topic);
  RETURN QUERY
  WITH
    -- Running past the resume point: named only by runs rows that end past it.
    running AS MATERIALIZED (SELECT unnest(r.tokens) AS token FROM __schema__.runs r WHERE r.topic = p_topic
      AND (r.last_due, r.last_member) > (coalesce(p_resume, -9223372036854775808), coalesce(p_resume_member, ''))),
    running_ticks AS MATERIALIZED (SELECT unnest(r.tokens) AS token FROM __schema__.runs r WHERE r.topic = p_topic AND r.ticks),
    -- Read only when the claim is not full (to tell whether due rows were left).
    running_all AS MATERIALIZED (SELECT unnest(r.tokens) AS token FROM __schema__.runs r WHERE r.topic = p_topic),
    picked AS (
      SELECT w.ctid AS row_id, w.member, w.key, w.token, w.attempt, w.due_at, w.payload, w.batch, w.items, w.trace, w.tick
      FROM __schema__.actions w
      WHERE w.topic = p_topic AND w.due_at <= v_now AND NOT w.tick
        AND (w.due_at, w.member) > (coalesce(p_resume, -9223372036854775808), coalesce(p_resume_member, ''))
        AND p_limit > 0 AND NOT v_paused AND w.token NOT IN (SELECT n.token FROM running n)
      ORDER BY w.due_at, w.member LIMIT p_limit FOR UPDATE OF w SKIP LOCKED),
    ticked AS (
      SELECT w.ctid AS row_id, w.member, w.key, w.token, w.attempt, w.due_at, w.payload, w.batch, w.items, w.trace, w.tick
      FROM __schema__.actions w
      WHERE w.topic = p_topic AND w.tick AND w.due_at <= v_now AND p_ticks > 0 AND NOT v_paused AND w.token NOT IN (SELECT n.token FROM running_ticks n)
      ORDER BY w.due_at, w.member LIMIT p_ticks FOR UPDATE OF w SKIP LOCKED),
    taken AS (SELECT * FROM picked UNION ALL SELECT * FROM ticked),
    refiled AS (
      UPDATE __schema__.actions a SET cancel_by_key = false,
        member = CASE WHEN a.member = a.key THEN a.key || chr(31) || lpad(a.token::text, 20, '0') ELSE a.member END
      WHERE a.ctid = ANY (ARRAY(SELECT t.row_id FROM taken t WHERE t.batch)) AND a.topic = p_topic
      RETURNING a.member, a.key, a.token, a.attempt, a.due_at, a.payload, a.batch, a.items, a.trace, a.tick),
    claimed AS (
      SELECT t.member, t.key, t.token, t.attempt, t.due_at, t.payload, t.batch, t.items, t.trace, t.tick FROM taken t WHERE NOT t.batch
      UNION ALL SELECT * FROM refiled),
    recorded AS (
      INSERT INTO __schema__.runs (topic, claim_id, lease_until, members, tokens, last_due, last_member, ticks)
      SELECT p_topic, p_claim_id, v_turn + p_lease, g.members, g.tokens, l.due_at, l.member, g.ticks
      FROM (SELECT array_agg(c.member) AS members, array_agg(c.token) AS tokens, bool_or(c.tick) AS ticks FROM claimed c) g,
        -- (None taken: no row here, and none inserted.)
        (SELECT c.due_at, c.member FROM claimed c ORDER BY c.due_at DESC, c.member DESC LIMIT 1) l
      RETURNING 1),
    head AS MATERIALIZED (
      SELECT v_now AS now_ms, v_revived AS revived, v_paused AS paused, v_completed AS completed, v_finished AS finished,
        CASE WHEN p_limit > 0 AND (SELECT count(*) FROM picked) >= p_limit THEN NULL
          ELSE least((SELECT min(w.due_at) FROM __schema__.actions w WHERE w.topic = p_topic AND w.due_at > v_now),
                     (SELECT min(r.lease_until) FROM __schema__.runs r WHERE r.topic = p_topic)) END AS next_at,
        CASE WHEN p_limit > 0 AND (SELECT count(*) FROM picked) >= p_limit THEN true
          ELSE (SELECT count(*) FROM (SELECT 1 FROM __schema__.actions w WHERE w.topic = p_topic AND w.due_at <= v_now AND NOT w.tick
                  AND w.token NOT IN (SELECT n.token FROM running_all n) ORDER BY w.due_at, w.member LIMIT p_limit + 1) d) > (SELECT count(*) FROM picked) END AS more_due,
        (SELECT min(t.due_at) FROM __schema__.actions t WHERE t.topic = p_topic AND t.tick AND t.due_at > v_now) AS next_tick,
        (SELECT count(*) FROM (SELECT 1 FROM __schema__.actions t WHERE t.topic = p_topic AND t.tick AND t.due_at <= v_now
           AND t.token NOT IN (SELECT n.token FROM running_ticks n) ORDER BY t.due_at, t.member LIMIT p_ticks + 1) d) > (SELECT count(*) FROM ticked) AS more_ticks,
        -- The last row picked, as it was picked (a batch is re-filed under another member): the next resume point.
        (SELECT ARRAY[p.due_at::text, p.member] FROM picked p ORDER BY p.due_at DESC, p.member DESC LIMIT 1) AS last_picked)
  SELECT h.now_ms, h.revived, h.paused, h.completed, h.finished, h.next_at, h.more_due, h.next_tick, h.more_ticks, false,
    h.last_picked[1]::bigint, h.last_picked[2],
    NULL::text, NULL::text, NULL::bigint, NULL::integer, NULL::bigint, NULL::text, NULL::boolean, NULL::text[], NULL::text, NULL::boolean
  FROM head h
  UNION ALL
  SELECT NULL::bigint, NULL::integer, NULL::boolean, NULL::integer, NULL::integer, NULL::bigint, NULL::boolean, NULL::bigint, NULL::boolean, NULL::boolean,
    NULL::bigint, NULL::text,
    c.member, c.key, c.token, c.attempt, c.due_at, c.payload, c.batch, c.items, c.trace, c.tick
  FROM claimed c;
END
$fn$;
-- ---- end the claim ----
${STATEMENT_FUNCTIONS_SQL}`;
