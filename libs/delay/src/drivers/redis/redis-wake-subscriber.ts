import { Logger } from '@nestjs/common';
import { describeError } from '../../utils/describe-error';
import { RedisClient } from './redis-client';
import { RedisConnection } from './redis-connection';

/**
 * The pub/sub connection that carries wake-ups ("something in this topic is
 * now due at t"). A pub/sub connection can die without a word (an idle
 * timeout in a NAT or load balancer drops it, and nothing is ever read
 * again), so every check period it must answer a PING within the command
 * timeout, or it is replaced by a new one. Whenever the subscription is
 * (re)made, messages may have been missed meanwhile: `lookAgain` tells every
 * topic consumer to look at Redis now.
 */
export class RedisWakeSubscriber {
  private readonly logger = new Logger(RedisWakeSubscriber.name);
  private client: RedisClient | undefined;
  private checkTimer: NodeJS.Timeout | undefined;
  private checking = false;
  private stopped = false;

  constructor(
    private readonly connection: RedisConnection,
    /** channel → what to do with the due time a message carries */
    private readonly channels: Map<string, (dueAt: number) => void>,
    private readonly lookAgain: () => void,
    private readonly checkEveryMs: number,
  ) {}

  async start(): Promise<void> {
    await this.reopen();
    this.checkTimer = setInterval(() => void this.check(), this.checkEveryMs);
    this.checkTimer.unref();
  }

  /** Adds a channel (a shard another instance started to use); messages missed before it is subscribed are covered by the wake check. */
  listen(channel: string, onWake: (dueAt: number) => void): void {
    this.channels.set(channel, onWake);
    const client = this.client;
    if (!client) return;
    this.connection.bounded('SUBSCRIBE', client.subscribe(channel)).catch((error: unknown) => {
      this.logger.warn(`Could not subscribe to ${channel}: ${describeError(error)}`);
    });
  }

  /** Drops a channel no longer consumed. */
  unlisten(channel: string): void {
    if (!this.channels.delete(channel)) return;
    this.client?.unsubscribe(channel).catch(() => undefined);
  }

  stop(): void {
    this.stopped = true;
    if (this.checkTimer) clearInterval(this.checkTimer);
    this.checkTimer = undefined;
    this.client?.disconnect();
    this.client = undefined;
  }

  private async open(): Promise<void> {
    const client = await this.connection.duplicate(true);
    if (this.stopped) {
      client.disconnect();
      return;
    }
    // Never two subscribers: one left behind would keep reconnecting, and the process alive.
    this.client?.disconnect();
    client.on('message', (channel: string, message: string) => this.channels.get(channel)?.(Number(message)));
    // After ioredis reconnects by itself it emits 'ready' before it subscribes again: subscribe, then look.
    client.on('ready', () => {
      this.connection.bounded('SUBSCRIBE', client.subscribe(...this.channels.keys())).then(this.lookAgain, this.lookAgain);
    });
    this.client = client;
    try {
      await this.connection.bounded('SUBSCRIBE', client.subscribe(...this.channels.keys()));
    } catch (error) {
      // Not fatal: the next check replaces it, and the consumers' safety re-check covers the gap.
      this.logger.warn(`Could not subscribe to wake-ups: ${describeError(error)}`);
    }
    this.lookAgain();
  }

  /** Keep-alive: a subscriber that does not answer a PING is replaced; one that could not be opened is tried again. */
  private async check(): Promise<void> {
    // One check at a time: a PING may take up to the command timeout, longer than the check period.
    if (this.stopped || this.checking) return;
    this.checking = true;
    try {
      const client = this.client;
      if (client) {
        try {
          await this.connection.bounded('PING (pub/sub)', client.ping());
          return;
        } catch (error) {
          this.logger.warn(`The wake-up connection did not answer (${describeError(error)}): opening a new one`);
          client.disconnect();
          if (this.client === client) this.client = undefined;
        }
      }
      await this.reopen();
    } finally {
      this.checking = false;
    }
  }

  /** Opens a subscriber; failing that, the consumers' safety re-check covers wake-ups until the next check. */
  private async reopen(): Promise<void> {
    try {
      await this.open();
    } catch (error) {
      this.logger.warn(`Could not open the wake-up connection yet: ${describeError(error)}`);
      this.lookAgain();
    }
  }
}
