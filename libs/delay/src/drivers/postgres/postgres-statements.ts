import { LISTED_BATCH_ITEMS } from '../../delay.constants';
/**
 * Every statement the postgres driver sends, for one schema. Each is one
 * call of a function of the schema's (postgres-statement-functions.sql.ts),
 * so a write runs inside the application's transaction with no extra round
 * trip and no savepoint, and nothing in the statement is looked up through
 * the session's search_path. Parameters are `$n`, always cast to a built-in
 * type named in full, so the same text runs with bound parameters on the
 * driver's pool and with literals in a transaction.
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
  readonly wakeTags: string;
  readonly beginRun: string;
  readonly completeRun: string;
  readonly advanceSeries: string;
  readonly completeOccurrences: string;
  readonly retryOccurrence: string;
  readonly buryOccurrence: string;
  readonly declareSeries: string;
  readonly lastSeriesRuns: string;
  readonly listSeries: string;
  readonly getEach: string;
  readonly advanceSeriesEach: string;
  readonly advanceSeriesSteps: string;
  readonly vacuumCandidates: string;
}

export function postgresStatements(schema: string): PostgresStatements {
  const s = schema;
  // Built-in types named in full: a cast is looked up through the session's search_path too.
  const text = 'pg_catalog.text';
  const bigint = 'pg_catalog.int8';
  const int = 'pg_catalog.int4';
  const bool = 'pg_catalog.bool';
  return {
    channel: s,
    // $1 topic, $2 keys, $3 absolute, $4 values, $5 payloads, $6 keep, $7 traces, $8 max past, $9 horizon, $10 the store's id in a transaction, else null (the guard: clock_ms)
    schedule: `SELECT status, due_at, payload, attempt, now_ms FROM ${s}.schedule($1::${text}, $2::${text}[], $3::${bool}[], $4::${bigint}[], $5::${text}[], $6::${bool}[], $7::${text}[], $8::${bigint}, $9::${bigint}, $10::${text})`,
    reschedule: `SELECT status, due_at, payload, attempt, now_ms FROM ${s}.reschedule($1::${text}, $2::${text}, $3::${bool}, $4::${bigint}, $5::${bigint}, $6::${bigint}, $7::${text})`,
    collect: `SELECT status, size, due_at, now_ms FROM ${s}.collect($1::${text}, $2::${text}, $3::${text}, $4::${bigint}, $5::${bigint}, $6::${bool}, $7::${int}, $8::${text}, $9::${text}, $10::${bigint})`,
    // $1 topic, $2 key, $3 the store's id in a transaction, else null. The clock is read last, after the delete: its guard
    // refuses (and so undoes) a delete that would commit on its own, or on another database.
    cancel: `SELECT removed, now_ms FROM ${s}.cancel($1::${text}, $2::${text}, $3::${text})`,
    // Autocommit cancels of one tick, $2 the keys in call order: per call, how many rows it removed.
    cancelEach: `SELECT removed FROM ${s}.cancel_each($1::${text}, $2::${text}[])`,
    get: `SELECT * FROM ${s}.get($1::${text}, $2::${text})`,
    // The same in the application's transaction, $3 the store's id: its guard refuses a transaction over or on another
    // database, whether or not the key has an action.
    getInTransaction: `SELECT * FROM ${s}.get($1::${text}, $2::${text}, $3::${text})`,
    // The id the store was given when its schema was made: the guard of each write in the application's transaction
    // compares it with its database's.
    storeId: `SELECT ${s}.store_id() AS id`,
    // A listing shows a batch's first LISTED_BATCH_ITEMS items and its size, not the whole array. Running actions first.
    list: `SELECT * FROM ${s}.list($1::${text}, $2::${int}, $3::${bigint}, ${LISTED_BATCH_ITEMS})`,
    count: `SELECT n FROM ${s}.count($1::${text})`,
    listDead: `SELECT * FROM ${s}.list_dead($1::${text}, $2::${int}, $3::${bigint})`,
    countDead: `SELECT n FROM ${s}.count_dead($1::${text})`,
    redrive: `SELECT ${s}.redrive($1::${text}, $2::${text}) AS status`,
    // ---- the claim (the claim function in the migrations: steps, head, turns; claim_taken since migration 6) ----
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
    // One row (claim_taken, migration 6): the head's columns and `taken`, what it took as a JSON array (postgres-claim-reply.ts).
    claim: `SELECT * FROM ${s}.claim_taken($1::${text}, $2::${int}, $3::${bigint}, $4::${text}, $5::${int}, $6::${bigint}, $7::${text}, $8::${text}[], $9::${bigint}[], $10::${text}[], $11::${bigint}, $12::${bool})`,
    // ---- end the claim ----
    // Claims whose reply was lost ($2, their ids), asked again: their leases renewed ($3 ms), the actions they took that
    // still hold their token handed back, same attempt (see recover in the migrations).
    recover: `SELECT * FROM ${s}.recover($1::${text}, $2::${text}[], $3::${bigint})`,
    // Runs rows of this consumer's claims that are over ($2: every outcome recorded).
    finish: `SELECT finished FROM ${s}.finish($1::${text}, $2::${text}[])`,
    complete: `SELECT completed FROM ${s}.complete($1::${text}, $2::${text}[], $3::${bigint}[])`,
    // $1 topic, $2 member, $3 token, $4 backoff ms.
    retry: `SELECT due_at FROM ${s}.retry($1::${text}, $2::${text}, $3::${bigint}, $4::${bigint})`,
    // $1 topic, $2 member, $3 token, $4 error.
    bury: `SELECT buried FROM ${s}.bury($1::${text}, $2::${text}, $3::${bigint}, $4::${text})`,
    // ---- lease renewal, reporting runs whose arming is gone ----
    // $1 topic, $2 lease ms, $3 the claims whose runs are not over, $4 members, $5 tokens of the runs going on. Returns
    // the members whose row is gone or holds another token (cancelled, re-armed, taken back after the lease ran out);
    // the consumer tells those runs. A lease already expired is not renewed: its runs are the next claim's to take back
    // (a row such a claim holds is skipped, not waited for).
    extend: `SELECT member FROM ${s}.extend($1::${text}, $2::${bigint}, $3::${text}[], $4::${text}[], $5::${bigint}[])`,
    // ---- end lease renewal ----
    // At shutdown: runs still going are handed back, same attempt, under a new token; every instance is told.
    release: `SELECT released FROM ${s}.release($1::${text}, $2::${text}[], $3::${bigint}[])`,
    pause: `SELECT paused FROM ${s}.pause($1::${text})`,
    // Consumers asleep on a paused topic have no timer armed: "look now".
    resume: `SELECT resumed FROM ${s}.resume($1::${text})`,
    isPaused: `SELECT paused FROM ${s}.is_paused($1::${text})`,
    runNow: `SELECT found, woke FROM ${s}.run_now($1::${text}, $2::${text})`,
    topics: `SELECT * FROM ${s}.topics()`,
    topicHealth: `SELECT * FROM ${s}.topic_health($1::${text}[])`,
    now: `SELECT ${s}.clock_ms(NULL) AS now_ms`,
    wakeTags: `SELECT topic, tag FROM ${s}.wake_tags($1::${text}[])`,
    // ---- transactional runs (in the handler's transaction) ----
    // $1 topic, $2 member, $3 token, $4 the store's id, $5 lock timeout ms: whether the arming is there (now held).
    beginRun: `SELECT ${s}.begin_run($1::${text}, $2::${text}, $3::${bigint}, $4::${text}, $5::${bigint}) AS found`,
    // $1 topic, $2 member, $3 token, $4 start time for a recurring occurrence (else null), $5 the store's id.
    completeRun: `SELECT ${s}.complete_run($1::${text}, $2::${text}, $3::${bigint}, $4::${bigint}, $5::${text}) AS completed`,
    // ---- end transactional runs ----
    // $1 topic, $2 series key, $3 expect ('token', 'payload', 'absent'), $4 its value, $5 overlap, $6 next ('keep', 'remove', 'delay', 'at'),
    // $7 its ms, $8 its payload, $9 occurrence keys, $10 absolute, $11 ms, $12 payloads, $13 orphan grace ms (0: none)
    // (see advance_series in the migrations), $14 the store's id in a transaction, else null; bufferOne's step while a previous occurrence
    // is alive: $15 next ('delay', 'at' or null for none), $16 its ms, $17 its payload, $18 the keys then skipped (migration 2).
    // The guard is read in the same statement, after the step: it refuses (and so undoes) a step meant for a transaction that would commit on its own, or on another database.
    advanceSeries: `SELECT r.status, r.created, r.skipped, r.cancelled, r.soonest, r.now_ms, r.blocker, r.blocker_state, r.blocker_due, r.blocker_attempt,
        ${s}.clock_ms($14::${text}) AS guard
      FROM ${s}.advance_series($1::${text}, $2::${text}, $3::${text}, $4::${text}, $5::${text}, $6::${text}, $7::${bigint}, $8::${text}, $9::${text}[], $10::${bool}[],
        $11::${bigint}[], $12::${text}[], $13::${bigint}, $15::${text}, $16::${bigint}, $17::${text}, $18::${text}[]) r`,
    // ---- outcomes of recurring occurrences: the same, and the schedule's last run (record_series_runs) ----
    // Used only when a run is a recurring occurrence's, so the outcomes of one-off actions pay nothing for it.
    // completeOccurrences: $1 topic, $2 members, $3 tokens, $4 start times (null for a run that is no occurrence).
    completeOccurrences: `SELECT completed FROM ${s}.complete_occurrences($1::${text}, $2::${text}[], $3::${bigint}[], $4::${bigint}[])`,
    // retryOccurrence: $1 topic, $2 member, $3 token, $4 backoff ms, $5 start time.
    retryOccurrence: `SELECT due_at FROM ${s}.retry_occurrence($1::${text}, $2::${text}, $3::${bigint}, $4::${bigint}, $5::${bigint})`,
    // buryOccurrence: $1 topic, $2 member, $3 token, $4 error, $5 start time.
    buryOccurrence: `SELECT buried FROM ${s}.bury_occurrence($1::${text}, $2::${text}, $3::${bigint}, $4::${text}, $5::${bigint})`,
    // ---- end outcomes of recurring occurrences ----
    // ---- Recurring: declaration marks and last runs ----
    // $1 topic, $2 series keys, $3 ms from now. A mark only moves later.
    declareSeries: `SELECT ${s}.declare_series($1::${text}, $2::${text}[], $3::${bigint})`,
    // $1 topic, $2 series keys: one row per key, in order, all null where none is recorded.
    lastSeriesRuns: `SELECT * FROM ${s}.last_series_runs($1::${text}, $2::${text}[])`,
    // ---- end declaration marks and last runs ----
    // ---- Recurring: listings by key and bulk writes (migration 2) ----
    // $1 topic, $2 the key after which the page starts (null: from the first), $3 limit.
    listSeries: `SELECT * FROM ${s}.list_series($1::${text}, $2::${text}, $3::${int})`,
    // $1 topic, $2 members: a row (with ord, its place in $2) per member that has an action.
    getEach: `SELECT * FROM ${s}.get_each($1::${text}, $2::${text}[])`,
    // $1 topic, $2 series keys (code point order), $3 expect per key, $4 its value, $5 next per key, $6 its ms, $7 its payload.
    advanceSeriesEach: `SELECT ord, status, due_at, now_ms FROM ${s}.advance_series_each($1::${text}, $2::${text}[], $3::${text}[], $4::${text}[], $5::${text}[], $6::${bigint}[], $7::${text}[])`,
    // ---- end listings by key and bulk writes ----
    // ---- Recurring: many steps in one statement (migration 4) ----
    // $1 topic, then per step (code point order of $2): $2 series key, $3 expect, $4 its value, $5 overlap, $6 next, $7 its ms,
    // $8 its payload, $9 how many occurrences; $10-$13 the occurrences of all steps one after the other (keys, absolute, ms, payloads);
    // $14 orphan grace ms; bufferOne's step while a previous occurrence is alive: $15 next (null: none), $16 its ms, $17 its payload,
    // $18 how many skipped keys, $19 those keys of all steps one after the other. A row per step, ord its place.
    advanceSeriesSteps: `SELECT ord, status, created, skipped, cancelled, soonest, now_ms, blocker, blocker_state, blocker_due, blocker_attempt
      FROM ${s}.advance_series_steps($1::${text}, $2::${text}[], $3::${text}[], $4::${text}[], $5::${text}[], $6::${text}[], $7::${bigint}[], $8::${text}[],
        $9::${int}[], $10::${text}[], $11::${bool}[], $12::${bigint}[], $13::${text}[], $14::${bigint}[], $15::${text}[], $16::${bigint}[], $17::${text}[],
        $18::${int}[], $19::${text}[])`,
    // ---- end many steps ----
    // Migration 8. $1 the least dead rows: the schema's busy tables over it that this role may vacuum (postgres-vacuum.ts).
    vacuumCandidates: `SELECT table_name, dead FROM ${s}.vacuum_candidates($1::${bigint})`,
  };
}
