import { Logger } from '@nestjs/common';
import { describeError } from '../../utils/describe-error';
import { claimsSettled } from '../claim-in-flight';
import { untilDeadline } from '../until-deadline';
import { PostgresConnection } from './postgres-connection';
import { int } from './postgres-rows';
import { PostgresStatements } from './postgres-statements';
import { PostgresTopicConsumer } from './postgres-topic-consumer';

/**
 * What shutdown hands back on PostgreSQL, due now, same attempt, so that
 * another instance runs it at once instead of after its lease (and, on its
 * last attempt, instead of burying it unrun): the runs still going when the
 * drain timed out, and what claims whose reply was lost took. Each call is
 * bounded by `deadline`.
 */
export class PostgresHandBack {
  private readonly logger = new Logger(PostgresHandBack.name);

  constructor(
    private readonly connection: PostgresConnection,
    private readonly sql: PostgresStatements,
  ) {}

  /** Shutdown timed out: hand the runs still going back, so another instance takes them now. */
  async releaseRunning(consumers: readonly PostgresTopicConsumer[], deadline: number): Promise<void> {
    await Promise.all(
      consumers
        .filter((topicConsumer) => topicConsumer.running.size > 0)
        .map(async (topicConsumer) => {
          const { members, tokens } = topicConsumer.runningLeases();
          try {
            const released = await this.release(topicConsumer.topic, members, tokens, deadline);
            this.logger.warn(`Shutdown timed out: ${released} running action(s) of "${topicConsumer.topic}" handed back`);
          } catch (error) {
            this.logger.warn(`Could not hand running actions back (their leases will expire instead): ${describeError(error)}`);
          }
        }),
    );
  }

  /**
   * Claims whose reply was lost (their connection reset) and that were not asked again before shutdown: what they
   * took is handed back, due now, same attempt, instead of waiting out their lease, and their runs rows go. Asked
   * again while the database is unreachable, until `deadline`.
   */
  async releaseLostClaims(consumers: readonly PostgresTopicConsumer[], deadline: number): Promise<void> {
    await claimsSettled(consumers.map((topicConsumer) => topicConsumer.claimInFlight), deadline);
    await Promise.all(
      consumers
        .filter((topicConsumer) => topicConsumer.hasLostClaim)
        .map(async (topicConsumer) => {
          const { topic } = topicConsumer;
          let taken: { claimIds: string[]; members: string[]; tokens: string[] } | undefined;
          try {
            // A connection lost again meanwhile fails the call at once: the pool opens another. Handing back twice
            // changes nothing (release names each run's token), so a lost reply to it is sent again too.
            const released = await untilDeadline(
              deadline,
              async () => {
                taken ??= await topicConsumer.takeLostClaims(Math.max(1, deadline - Date.now()));
                return taken.members.length === 0 ? 0 : this.release(topic, taken.members, taken.tokens, deadline);
              },
              () => Promise.resolve(),
            );
            if (released > 0) this.logger.log(`Shutdown: ${released} action(s) of "${topic}" that a claim whose reply was lost took handed back`);
          } catch (error) {
            this.logger.warn(`Could not hand back what a claim whose reply was lost took (its lease will expire instead): ${describeError(error)}`);
            return;
          }
          // Their runs rows name tokens that are gone now; without this they would stay until their lease ran out.
          if (taken && taken.claimIds.length > 0) {
            await this.connection.query(this.sql.finish, [topic, taken.claimIds], Math.max(1, deadline - Date.now())).catch(() => undefined);
          }
        }),
    );
  }

  /** The runs named by member and token handed back, due now, same attempt, within `deadline`; how many were. */
  private async release(topic: string, members: readonly string[], tokens: readonly string[], deadline: number): Promise<number> {
    const rows = await this.connection.query(this.sql.release, [topic, members, tokens], Math.max(1, deadline - Date.now()));
    return int(rows[0].released);
  }
}
