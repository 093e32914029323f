import { ActionKindConflictError } from '../../errors/action-kind-conflict.error';
import { InvalidKeyError } from '../../errors/invalid-key.error';
import { AdvanceSeriesCommand, AdvanceSeriesResult, SeriesBlocker } from '../../interfaces/delay-driver.interface';
import { codePointOrder } from '../../utils/code-point-order';
import { PostgresConnection, Row } from './postgres-connection';
import { dueParams, expectParams, hasNul, nextParams, occurrencePayload, whileAliveParams } from './postgres-params';
import { int, texts } from './postgres-rows';
import { PostgresStatements } from './postgres-statements';
import { PostgresTopicConsumer } from './postgres-topic-consumer';
import { PostgresWrites } from './postgres-writes';

/** What the steps need of the driver around them. */
export interface PostgresSeriesStepsContext {
  readonly connection: PostgresConnection;
  readonly sql: PostgresStatements;
  readonly writes: PostgresWrites;
  /** Gathers an autocommit step with the others of its topic in this tick (it holds the key's place in the write order). */
  gather(command: AdvanceSeriesCommand): Promise<Row>;
  /** This instance's consumer of the topic, if it consumes it. */
  consumerOf(topic: string): PostgresTopicConsumer | undefined;
}

/**
 * The one atomic step of a recurring series: one call of the schema's
 * advance_series function (see its comment in the migrations), after this
 * driver's earlier writes to the series key, or inside the caller's
 * transaction when the command carries one. Outside a transaction, the
 * steps made in the same tick for the same topic (the ticks one claim
 * took) share one statement and one commit (advance_series_steps), each
 * still its own advance_series.
 */
export class PostgresSeriesSteps {
  constructor(private readonly context: PostgresSeriesStepsContext) {}

  async advance(command: AdvanceSeriesCommand): Promise<AdvanceSeriesResult> {
    const { topic, key } = command;
    if (hasNul(key)) throw new InvalidKeyError(key, 'contains U+0000, which PostgreSQL cannot store in text');
    for (const occurrence of command.occurrences) {
      if (hasNul(occurrence.key)) throw new InvalidKeyError(occurrence.key, 'contains U+0000, which PostgreSQL cannot store in text');
    }
    const { writes } = this.context;
    const sentAt = Date.now();
    let row: Row;
    if (command.transaction) {
      const [expectKind, expectValue] = expectParams(command.expect);
      const [nextKind, nextValue, nextPayload] = nextParams(command.next);
      const dues = command.occurrences.map((occurrence) => dueParams(occurrence.due));
      const whileAlive = whileAliveParams(command);
      const rows = await writes.write(topic, [key], command.transaction, this.context.sql.advanceSeries, (txStore) => [
        topic,
        key,
        expectKind,
        expectValue,
        command.overlap,
        nextKind,
        nextValue,
        nextPayload,
        command.occurrences.map((occurrence) => occurrence.key),
        dues.map(([absolute]) => absolute),
        dues.map(([, value]) => value),
        command.occurrences.map(occurrencePayload),
        command.orphanGraceMs ?? 0,
        txStore,
        ...whileAlive,
      ]);
      row = rows[0];
    } else {
      row = await this.context.gather(command);
    }
    writes.sawNow(row.now_ms, sentAt);
    const status = int(row.status);
    if (status === -3) throw new ActionKindConflictError(topic, key, 'batch');
    if (status === 2) return { applied: true, created: [], skipped: [], cancelled: [], orphaned: true };
    if (status !== 1) return { applied: false, created: [], skipped: [], cancelled: [] };
    const cancelled = texts(row.cancelled);
    const consumer = this.context.consumerOf(topic);
    // A cancelled occurrence running here is told now; one running on another instance, or cancelled in the caller's
    // transaction (which may yet roll back), learns it at its next lease renewal.
    if (cancelled.length > 0 && !command.transaction) consumer?.revoke(cancelled);
    // This instance's consumer need not wait for a notification: a re-armed tick that is not the topic's
    // earliest due time notifies no one, and a consumer whose slots are all busy sleeps until its next tick.
    // In the caller's transaction, the notification (sent at its commit, none at a rollback) is the only wake-up.
    if (!command.transaction && row.soonest !== null) consumer?.wake(int(row.soonest));
    const blockedBy: SeriesBlocker | undefined =
      row.blocker === null ? undefined : { occurrenceKey: String(row.blocker), state: row.blocker_state === 'running' ? 'running' : 'waiting', dueAt: int(row.blocker_due), attempt: int(row.blocker_attempt) };
    return { applied: true, created: texts(row.created), skipped: texts(row.skipped), cancelled, ...(blockedBy ? { blockedBy } : {}) };
  }

  /**
   * The gathered steps of one topic as one statement of advance_series_steps,
   * sent as is (the gatherer holds the keys' places in the write order):
   * the steps in code point order of their keys (two statements then lock
   * ticks in the same order; steps of one key keep their order), each one's
   * advance_series row back in call order.
   */
  async sendGathered(topic: string, commands: readonly AdvanceSeriesCommand[], timeoutMs: number): Promise<Row[]> {
    const order = codePointOrder(commands, (command) => command.key);
    const sorted = order.map((n) => commands[n]);
    const expects = sorted.map(({ expect }) => expectParams(expect));
    const nexts = sorted.map(({ next }) => nextParams(next));
    const occurrences = sorted.flatMap((command) => command.occurrences);
    const dues = occurrences.map((occurrence) => dueParams(occurrence.due));
    const whileAlive = sorted.map(whileAliveParams);
    const rows = await this.context.connection.queryPrepared(this.context.sql.advanceSeriesSteps, [
      topic,
      sorted.map((command) => command.key),
      expects.map(([kind]) => kind),
      expects.map(([, value]) => value),
      sorted.map((command) => command.overlap),
      nexts.map(([kind]) => kind),
      nexts.map(([, value]) => value),
      nexts.map(([, , payload]) => payload),
      sorted.map((command) => command.occurrences.length),
      occurrences.map((occurrence) => occurrence.key),
      dues.map(([absolute]) => absolute),
      dues.map(([, value]) => value),
      occurrences.map(occurrencePayload),
      sorted.map((command) => command.orphanGraceMs ?? 0),
      whileAlive.map(([kind]) => kind),
      whileAlive.map(([, value]) => value),
      whileAlive.map(([, , payload]) => payload),
      whileAlive.map(([, , , skipped]) => skipped.length),
      whileAlive.flatMap(([, , , skipped]) => skipped),
    ], timeoutMs);
    const results: Row[] = new Array(commands.length);
    for (const row of rows) results[order[int(row.ord) - 1]] = row;
    return results;
  }
}
