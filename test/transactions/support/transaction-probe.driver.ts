import {
  CollectCommand,
  CollectResult,
  DelayConsumer,
  DelayDriver,
  DriverTransaction,
  PageRequest,
  RescheduleCommand,
  ScheduleCommand,
  ScheduleManyCommand,
  ScheduleResult,
  StoredAction,
  StoredDeadAction,
  WheelDriver,
} from 'nestjs-delay';

/** One write the probe saw run inside a transaction. */
export interface ProbedWrite {
  readonly op: 'schedule' | 'scheduleMany' | 'reschedule' | 'cancel' | 'collect';
  readonly key: string;
  /** The adapter DelayService bound the transaction to. */
  readonly adapter: string;
  /** txid_current() as the statement saw it: equal to the caller's when it ran in the caller's transaction. */
  readonly txid: string;
}

/** The table the probe writes to; create it with PROBE_TABLE_DDL before use. */
export const PROBE_TABLE = 'delay_tx_probe';
export const PROBE_TABLE_DDL = `CREATE TABLE IF NOT EXISTS ${PROBE_TABLE} (op text NOT NULL, key text NOT NULL, txid text NOT NULL)`;

/**
 * A test-only driver that can join transactions: the wheel keeps the
 * actions, and every write given a transaction first inserts a row into
 * delay_tx_probe through it, on the real PostgreSQL, returning
 * txid_current(). The row is there after the caller's COMMIT and gone after
 * its ROLLBACK, which is what proves the statement ran inside the caller's
 * transaction. It stands in for the postgres driver on the binder's path;
 * it is not a storage driver.
 */
export class TransactionProbeDriver implements DelayDriver {
  readonly name = 'txprobe';
  readonly supportsTransactions = true;
  readonly writes: ProbedWrite[] = [];
  private readonly wheel = new WheelDriver();

  get horizonMs(): number {
    return this.wheel.horizonMs;
  }

  async schedule(command: ScheduleCommand): Promise<ScheduleResult> {
    await this.probe('schedule', command.key, command.transaction);
    return this.wheel.schedule(command);
  }

  async scheduleMany(command: ScheduleManyCommand): Promise<ScheduleResult[]> {
    await this.probe('scheduleMany', command.entries.map((entry) => entry.key).join(','), command.transaction);
    return this.wheel.scheduleMany(command);
  }

  async reschedule(command: RescheduleCommand): Promise<StoredAction | null> {
    await this.probe('reschedule', command.key, command.transaction);
    return this.wheel.reschedule(command);
  }

  async cancel(topic: string, key: string, transaction?: DriverTransaction): Promise<boolean> {
    await this.probe('cancel', key, transaction);
    return this.wheel.cancel(topic, key);
  }

  async collect(command: CollectCommand): Promise<CollectResult> {
    await this.probe('collect', command.key, command.transaction);
    return this.wheel.collect(command);
  }

  get(topic: string, key: string): Promise<StoredAction | null> {
    return this.wheel.get(topic, key);
  }

  list(topic: string, page: Required<PageRequest>): Promise<StoredAction[]> {
    return this.wheel.list(topic, page);
  }

  count(topic: string): Promise<number> {
    return this.wheel.count(topic);
  }

  listDead(topic: string, page: Required<PageRequest>): Promise<StoredDeadAction[]> {
    return this.wheel.listDead(topic, page);
  }

  countDead(topic: string): Promise<number> {
    return this.wheel.countDead(topic);
  }

  redrive(topic: string, id: string): Promise<boolean> {
    return this.wheel.redrive(topic, id);
  }

  start(consumer: DelayConsumer): Promise<void> {
    return this.wheel.start(consumer);
  }

  drain(timeoutMs: number): Promise<void> {
    return this.wheel.drain(timeoutMs);
  }

  close(): Promise<void> {
    return this.wheel.close();
  }

  private async probe(op: ProbedWrite['op'], key: string, transaction: DriverTransaction | undefined): Promise<void> {
    if (!transaction) return;
    const rows = await transaction.query(`INSERT INTO ${PROBE_TABLE} (op, key, txid) VALUES ($1, $2, txid_current()::text) RETURNING txid`, [op, key]);
    this.writes.push({ op, key, adapter: transaction.adapter, txid: String(rows[0]?.txid) });
  }
}
