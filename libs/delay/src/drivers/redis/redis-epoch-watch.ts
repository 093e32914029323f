import { randomBytes } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { describeError } from '../../utils/describe-error';
import { RedisConnection } from './redis-connection';

/**
 * Notices when Redis comes back empty: a restart without persistence, or a
 * failover to a replica that never had our data. At start the driver makes
 * sure an epoch key exists and remembers its value; if the key later
 * vanishes or changes, whatever was pending before may be gone. Nothing can
 * bring it back, but nobody should learn it from a customer: it is logged
 * as an error and reported to `onReset` (DelayService.events$ 'storeReset').
 */
export class RedisEpochWatch {
  private readonly logger = new Logger(RedisEpochWatch.name);
  private epoch: string | undefined;

  constructor(
    private readonly connection: RedisConnection,
    private readonly key: string,
    private readonly onReset: (detail: string) => void,
  ) {}

  /** Reads (or sets) the epoch; a failure is not fatal: the next check does it. */
  async check(): Promise<void> {
    if (this.connection.isClosed) return;
    try {
      const [found, current] = await this.connection.run<[number, string]>('epoch', [this.key], [randomBytes(8).toString('hex')]);
      if (this.epoch !== undefined && current !== this.epoch) {
        const detail = Number(found) === 0 ? 'its data was lost (restart without persistence, or failover to a replica without it)' : 'another dataset took its place';
        this.logger.error(`Redis came back empty: ${detail}. Actions pending before then may be lost; runs still going will not change anything scheduled since.`);
        this.onReset(detail);
      }
      this.epoch = current;
    } catch (error) {
      this.logger.debug(`Epoch check skipped: ${describeError(error)}`);
    }
  }
}
