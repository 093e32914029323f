import { Logger } from '@nestjs/common';
import { Client } from 'pg';
import { PgPoolClientLike } from '../../interfaces/postgres-pool.interface';
import { describeError } from '../../utils/describe-error';
import { settleWithin } from '../../utils/settle-within';
import { PostgresConnection } from './postgres-connection';

/** One topic's wake-up: a write made its earliest due time earlier (the claim it makes tells when). */
export type WakeHandler = () => void;

/** The LISTEN connection as the listener uses it: a pg.Client of its own, or a client borrowed from the application's pool for good. */
interface ListenClient {
  readonly client: PgPoolClientLike;
  close(): void;
}

/**
 * LISTENs on the schema's wake channel on a connection of its own. Writes
 * that make a topic's earliest due time earlier notify it with the topic's
 * tag (pg_notify in the same statement, so the message goes out only if the
 * write commits), and the topic's consumer looks. Any role may notify the
 * channel: the consumer bounds what a flood of notifications costs.
 *
 * A notification is lost with its connection, and a connection can die
 * without a word; so every `wakeCheckMs` the connection must answer a
 * SELECT 1 or it is replaced, and after every (re)connect all consumers
 * look at once (`lookAgain`): what was notified meanwhile is found.
 */
export class PostgresWakeListener {
  private readonly logger = new Logger(PostgresWakeListener.name);
  private current: ListenClient | undefined;
  private checkTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** The handlers by their topic's tag, read at every connect. */
  private byTag = new Map<string, WakeHandler>();
  private connecting = false;
  private failures = 0;

  constructor(
    private readonly connection: PostgresConnection,
    private readonly channel: string,
    /** By topic. */
    private readonly handlers: ReadonlyMap<string, WakeHandler>,
    /** The statement that reads the topics' tags ($1 the topics: rows of topic, tag). */
    private readonly tagsSql: string,
    private readonly lookAgain: () => void,
    private readonly wakeCheckMs: number,
  ) {}

  /** Connected and listening. */
  get listening(): boolean {
    return this.current !== undefined;
  }

  async start(): Promise<void> {
    await this.connect();
    this.checkTimer = setInterval(() => void this.check(), this.wakeCheckMs);
    this.checkTimer.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.checkTimer) clearInterval(this.checkTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.drop();
  }

  /** A notification names a topic by its tag (see wake_tag in the migrations); any other payload is ignored. */
  private readonly onNotification = (message: { channel: string; payload?: string }): void => {
    if (message.channel !== this.channel || !message.payload) return;
    this.byTag.get(message.payload)?.();
  };

  private readonly onLost = (): void => {
    if (this.stopped || !this.current) return;
    this.logger.warn('The LISTEN connection was lost; opening another');
    this.drop();
    this.retryLater();
  };

  private async connect(): Promise<void> {
    if (this.stopped || this.connecting) return;
    this.connecting = true;
    const timeoutMs = this.connection.commandTimeoutMs;
    let opened: ListenClient | undefined;
    try {
      opened = await settleWithin(this.open(), timeoutMs, () => new Error(`no connection within ${timeoutMs} ms`));
      const { client } = opened;
      client.on('notification', this.onNotification);
      client.on('error', this.onLost);
      client.on('end', this.onLost);
      await settleWithin(client.query(`LISTEN ${this.channel}`), timeoutMs, () => new Error(`LISTEN not answered within ${timeoutMs} ms`));
      const tags = await settleWithin(client.query(this.tagsSql, [[...this.handlers.keys()]]), timeoutMs, () => new Error(`the topics' tags were not read within ${timeoutMs} ms`));
      this.byTag = new Map(tags.rows.flatMap((row) => {
        const handler = this.handlers.get(String(row.topic));
        return handler ? [[String(row.tag), handler] as const] : [];
      }));
      if (this.stopped) {
        opened.close();
        return;
      }
      this.current = opened;
      if (this.failures > 0) this.logger.log('Listening for wake-ups again');
      this.failures = 0;
      // Whatever was notified while no one listened is found by looking now.
      this.lookAgain();
    } catch (error) {
      opened?.close();
      this.failures++;
      if (this.failures === 1 || this.failures % 20 === 0) this.logger.warn(`Cannot LISTEN for wake-ups (${describeError(error)}); retrying`);
      this.retryLater();
    } finally {
      this.connecting = false;
    }
  }

  private async open(): Promise<ListenClient> {
    const connectionString = this.connection.connectionString;
    if (connectionString === undefined) {
      const client = await this.connection.pool.connect();
      return { client, close: () => client.release(true) };
    }
    const client = new Client({ connectionString, keepAlive: true, connectionTimeoutMillis: this.connection.commandTimeoutMs, application_name: 'nestjs-delay listener' });
    client.on('error', () => undefined);
    await client.connect();
    return {
      client: client as unknown as PgPoolClientLike,
      close: () => {
        client.end().catch(() => undefined);
      },
    };
  }

  /** The connection must answer within the command timeout, or it is replaced. */
  private async check(): Promise<void> {
    const current = this.current;
    if (this.stopped || !current) return;
    const timeoutMs = this.connection.commandTimeoutMs;
    try {
      await settleWithin(current.client.query('SELECT 1'), timeoutMs, () => new Error(`no answer within ${timeoutMs} ms`));
    } catch (error) {
      if (this.current !== current) return;
      this.logger.warn(`The LISTEN connection did not answer (${describeError(error)}); opening another`);
      this.drop();
      void this.connect();
    }
  }

  private drop(): void {
    const current = this.current;
    this.current = undefined;
    if (!current) return;
    current.client.removeListener('notification', this.onNotification);
    current.client.removeListener('error', this.onLost);
    current.client.removeListener('end', this.onLost);
    current.client.on('error', () => undefined);
    current.close();
  }

  private retryLater(): void {
    if (this.stopped || this.retryTimer) return;
    const delay = Math.min(2_000, 100 * 2 ** Math.min(this.failures, 5));
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.connect();
    }, delay);
    this.retryTimer.unref();
  }
}
