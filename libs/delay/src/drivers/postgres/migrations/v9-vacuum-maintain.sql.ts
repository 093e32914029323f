/**
 * Migration 9: on PostgreSQL 17 and later, a role granted MAINTAIN on the
 * driver's tables (or a member of pg_maintain) may vacuum them without
 * owning them; `vacuum_candidates` (migration 8) listed only the tables
 * the calling role owns, so such an instance vacuumed nothing. It now also
 * lists those the role holds MAINTAIN on. On older servers, where the
 * privilege does not exist, it asks nothing more (the version is read
 * first, so the privilege's name is never looked up there). `__schema__`
 * is replaced by the schema's name.
 */
export const MIGRATION_9_SQL = String.raw`
-- vacuum_candidates: as migration 8, and tables the calling role holds MAINTAIN on (PostgreSQL 17+).
CREATE OR REPLACE FUNCTION __schema__.vacuum_candidates(p_min_dead bigint) RETURNS TABLE (table_name text, dead bigint)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
  SELECT c.relname::text, s.n_dead_tup
  FROM pg_class c JOIN pg_stat_all_tables s ON s.relid = c.oid
  WHERE c.relnamespace = '__schema__'::regnamespace AND c.relname IN ('actions', 'runs', 'series', 'series_runs')
    AND s.n_dead_tup >= p_min_dead
    AND (pg_has_role(c.relowner, 'USAGE')
      OR CASE WHEN current_setting('server_version_num')::integer >= 170000 THEN has_table_privilege(c.oid, 'MAINTAIN') ELSE false END)
    AND NOT EXISTS (SELECT 1 FROM pg_stat_progress_vacuum v WHERE v.relid = c.oid)
  ORDER BY s.n_dead_tup DESC
$fn$;
`;
