import { Client } from 'pg';

/** The database the shop's tables go in, and the role the shop connects as (its owner). */
export const SHOP_DATABASE = 'shop';
export const SHOP_ROLE = 'shop';

/**
 * What the shop's role may not do: it owns the shop's database and what is
 * in it (the migrations create the tables, the delay driver its schema),
 * and nothing more.
 */
const ROLE_LIMITS = 'LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS';

/**
 * Gives to the shop's role what a shop of before that role made as the
 * superuser: schemas, tables (with their indexes and the sequences of their
 * columns), other sequences, views, routines and types. The system's own
 * schemas are left alone.
 */
const TAKE_OVER = `
DO $$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT n.nspname FROM pg_namespace n
           WHERE n.nspowner = 'postgres'::regrole AND n.nspname !~ '^pg_' AND n.nspname NOT IN ('information_schema', 'public') LOOP
    EXECUTE format('ALTER SCHEMA %I OWNER TO ${SHOP_ROLE}', r.nspname);
  END LOOP;
  FOR r IN SELECT c.oid::regclass AS name, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE c.relowner = 'postgres'::regrole AND n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'
             AND (c.relkind IN ('r', 'p', 'v', 'm', 'f')
                  OR (c.relkind = 'S' AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')))) LOOP
    EXECUTE format(CASE WHEN r.relkind = 'S' THEN 'ALTER SEQUENCE %s OWNER TO ${SHOP_ROLE}' ELSE 'ALTER TABLE %s OWNER TO ${SHOP_ROLE}' END, r.name);
  END LOOP;
  FOR r IN SELECT p.oid::regprocedure AS name FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
           WHERE p.proowner = 'postgres'::regrole AND n.nspname !~ '^pg_' AND n.nspname <> 'information_schema' LOOP
    EXECUTE format('ALTER ROUTINE %s OWNER TO ${SHOP_ROLE}', r.name);
  END LOOP;
  FOR r IN SELECT t.oid::regtype AS name FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
           WHERE t.typowner = 'postgres'::regrole AND t.typtype IN ('e', 'd', 'r') AND n.nspname !~ '^pg_' AND n.nspname <> 'information_schema' LOOP
    EXECUTE format('ALTER TYPE %s OWNER TO ${SHOP_ROLE}', r.name);
  END LOOP;
END
$$`;

/**
 * As the superuser (on the embedded server only): makes the shop's role
 * (not a superuser, see ROLE_LIMITS) with `shopPassword`, and its
 * database, owned by it; a database a shop of before made as the superuser
 * is given to the role, with what is in it (TAKE_OVER). Returns the shop's connection
 * string, or undefined while the server does not accept connections yet.
 */
export async function provisionShopDatabase(port: number, superuserPassword: string, shopPassword: string): Promise<string | undefined> {
  const client = new Client({ host: '127.0.0.1', port, user: 'postgres', password: superuserPassword, database: 'postgres', connectionTimeoutMillis: 2_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch {
    await client.end().catch(() => undefined);
    return undefined;
  }
  try {
    const { rowCount: roles } = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [SHOP_ROLE]);
    // The password follows the file at every start; ALTER takes the limits back if someone widened them.
    await client.query(`${roles === 0 ? 'CREATE' : 'ALTER'} ROLE ${SHOP_ROLE} ${ROLE_LIMITS} PASSWORD ${client.escapeLiteral(shopPassword)}`);
    const { rows } = await client.query<{ owner: string }>('SELECT pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = $1', [SHOP_DATABASE]);
    const owner = rows[0]?.owner;
    if (owner === undefined) await client.query(`CREATE DATABASE ${SHOP_DATABASE} OWNER ${SHOP_ROLE}`);
    else if (owner !== SHOP_ROLE) await client.query(`ALTER DATABASE ${SHOP_DATABASE} OWNER TO ${SHOP_ROLE}`);
  } finally {
    await client.end().catch(() => undefined);
  }
  // At every start (a look at the catalogue when there is nothing to take): a start cut short halfway is finished by the next.
  await takeOverObjects(port, superuserPassword);
  return `postgres://${SHOP_ROLE}:${encodeURIComponent(shopPassword)}@127.0.0.1:${port}/${SHOP_DATABASE}`;
}

async function takeOverObjects(port: number, superuserPassword: string): Promise<void> {
  const client = new Client({ host: '127.0.0.1', port, user: 'postgres', password: superuserPassword, database: SHOP_DATABASE, connectionTimeoutMillis: 2_000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query(TAKE_OVER);
  } finally {
    await client.end().catch(() => undefined);
  }
}
