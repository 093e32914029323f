import { DriverUnavailableError } from '../../errors/driver-unavailable.error';
import { REDIS_SCRIPTS, RedisScriptName } from './redis-scripts.generated';
import { RedisSocketWatch } from './redis-socket-watch';
import type { Cluster, Redis } from 'ioredis';

/** What the writer needs of the command connection (which owns it). */
export interface WriterHost {
  duplicate(): Promise<Redis | Cluster>;
  bounded<T>(what: string, promise: Promise<T>, extraMs: number, suspectOnTimeout: boolean): Promise<T>;
  toError(what: string, error: unknown): Error;
}

type PipelineReply = Array<[Error | null, unknown]> | null;
type ScriptPipeline = Record<string, (...args: Array<string | number>) => unknown> & { exec(): Promise<PipelineReply> };

interface PendingWrite {
  readonly name: RedisScriptName;
  readonly keys: string[];
  readonly args: Array<string | number>;
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/**
 * Writes that must be on `replicas` replicas before the caller hears of them
 * (option waitForReplicas). WAIT blocks the connection it is sent on until
 * the replicas answer or its timeout passes, so these writes get a
 * connection of their own: claims, acks and reads never queue behind a
 * lagging replica. The writes of one topic issued in the same tick share
 * one WAIT (WAIT covers everything its connection wrote before it), so a
 * busy producer pays one replica round trip per tick, not one per call.
 */
export class RedisReplicatedWriter {
  private client: Redis | Cluster | undefined;
  /** Fails the writes in flight on the writer's socket when it closes (see RedisSocketWatch). */
  private watch: RedisSocketWatch | undefined;
  /** Per topic (one hash tag, so one Cluster slot: a pipeline may only span one), the writes of this tick. */
  private batches = new Map<string, PendingWrite[]>();
  private flushQueued = false;

  constructor(
    private readonly connection: WriterHost,
    private readonly replicas: number,
    private readonly timeoutMs: number,
  ) {}

  async connect(): Promise<void> {
    const client = await this.connection.duplicate();
    for (const script of Object.values(REDIS_SCRIPTS)) {
      client.defineCommand(script.command, { numberOfKeys: script.numberOfKeys, lua: script.lua });
    }
    this.client = client;
    this.watch = new RedisSocketWatch(client);
  }

  write<T>(name: RedisScriptName, keys: string[], args: Array<string | number>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const group = keys[0] ?? '';
      let batch = this.batches.get(group);
      if (!batch) {
        batch = [];
        this.batches.set(group, batch);
      }
      batch.push({ name, keys, args, resolve: resolve as (value: unknown) => void, reject });
      if (!this.flushQueued) {
        this.flushQueued = true;
        setImmediate(() => this.flush());
      }
    });
  }

  close(): void {
    this.watch?.stop();
    this.watch = undefined;
    this.client?.disconnect();
    this.client = undefined;
  }

  private flush(): void {
    this.flushQueued = false;
    const batches = this.batches;
    this.batches = new Map();
    for (const batch of batches.values()) void this.send(batch);
  }

  private async send(batch: PendingWrite[]): Promise<void> {
    const { client } = this;
    if (!client) {
      for (const write of batch) write.reject(new DriverUnavailableError('the Redis driver is closed'));
      return;
    }
    const pipeline = client.pipeline() as unknown as ScriptPipeline;
    for (const write of batch) pipeline[REDIS_SCRIPTS[write.name].command](...write.keys, ...write.args);
    pipeline.wait(this.replicas, this.timeoutMs);
    const what = batch.length === 1 ? batch[0].name : `${batch.length} writes`;
    let replies: PipelineReply;
    try {
      // WAIT may take up to its own timeout: the bound covers both. A slow WAIT is expected here, so no reconnect on timeout.
      const exec = pipeline.exec();
      replies = await this.connection.bounded(what, this.watch ? this.watch.track(what, exec) : exec, this.timeoutMs, false);
    } catch (error) {
      for (const write of batch) write.reject(error instanceof Error ? error : new DriverUnavailableError(String(error)));
      return;
    }
    const waitReply = replies?.[batch.length];
    const confirmed = waitReply && !waitReply[0] ? Number(waitReply[1]) : -1;
    batch.forEach((write, n) => {
      const reply = replies?.[n];
      if (!reply) write.reject(new DriverUnavailableError(`Redis did not answer ${write.name}`));
      else if (reply[0]) write.reject(this.connection.toError(write.name, reply[0]));
      else if (confirmed < this.replicas) {
        write.reject(
          new DriverUnavailableError(
            `${write.name} was written but ${confirmed < 0 ? 'no' : `only ${confirmed} of ${this.replicas}`} replica(s) confirmed it within ${this.timeoutMs} ms; ` +
              'a failover now could undo it (option waitForReplicas)',
          ),
        );
      } else write.resolve(reply[1]);
    });
  }
}
