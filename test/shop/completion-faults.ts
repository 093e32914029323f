import { Client } from 'pg';

/** What the first run's completion of a topic's action does: fail (raise), or stall for a while (for a kill -9 to land in). */
export type CompletionFault = { readonly kind: 'raise' } | { readonly kind: 'stall'; readonly seconds: number };

/**
 * Injects a fault into the completion of a topic's actions on their first
 * attempt, in the shop's database: a trigger on the postgres delay driver's
 * actions table (schema nestjs_delay), fired when a run's completion
 * deletes the action's row, so after everything the handler wrote. On a
 * transactional handler the completion is the last statement of the run's
 * own transaction: a failure there rolls back the handler's writes, and a
 * stall there is a moment at which the handler has written everything and
 * nothing has committed. Attempt 1 only: the retry completes.
 */
export async function injectCompletionFault(databaseUrl: string, topic: string, fault: CompletionFault): Promise<void> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const action =
      fault.kind === 'raise'
        ? `RAISE EXCEPTION 'injected fault: the completion of % % fails', OLD.topic, OLD.key;`
        : `PERFORM pg_sleep(${Number(fault.seconds)});`;
    await client.query(`
      CREATE FUNCTION public.completion_fault() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        ${action}
        RETURN OLD;
      END
      $fn$`);
    await client.query(
      `CREATE TRIGGER completion_fault AFTER DELETE ON nestjs_delay.actions FOR EACH ROW
       WHEN (OLD.topic = ${client.escapeLiteral(topic)} AND OLD.attempt = 1) EXECUTE FUNCTION public.completion_fault()`,
    );
  } finally {
    await client.end();
  }
}

/** The attempt the topic's action for `key` is on, or undefined when it is gone (completed). */
export async function actionAttempt(databaseUrl: string, topic: string, key: string): Promise<number | undefined> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ attempt: number }>('SELECT attempt FROM nestjs_delay.actions WHERE topic = $1 AND key = $2', [topic, key]);
    return rows[0]?.attempt;
  } finally {
    await client.end();
  }
}
