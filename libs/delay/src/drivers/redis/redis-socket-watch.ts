import { DriverUnavailableError } from '../../errors/driver-unavailable.error';

/** What the watch needs of a client: its socket's close, as ioredis reports it (Redis and Cluster alike). */
export interface ClosingClient {
  on(event: 'close' | 'end', listener: () => void): unknown;
  off(event: 'close' | 'end', listener: () => void): unknown;
}

/**
 * Fails every call in flight on a client's socket the moment that socket
 * closes. ioredis does not: with autoResendUnfulfilledCommands off (the
 * driver's own client), the commands sent on a socket that closed are
 * dropped at the next reconnect without ever settling, so a caller would
 * otherwise wait for its whole time bound (commandTimeout) for a reply that
 * can no longer come. A command that was written may have run (its reply is
 * what was lost): the error says so, and the caller decides whether to ask
 * again (the consumer re-asks its claim under the same id, an outcome
 * script is safe to repeat; a user's schedule is not repeated for them).
 *
 * A call made while the client is between sockets is rejected at once by
 * the driver's client (no offline queue); on a client that queues it (one
 * the user gave), it is failed at the next close, as it may go out later.
 */
export class RedisSocketWatch {
  private readonly inFlight = new Set<() => void>();

  constructor(private readonly client: ClosingClient) {
    client.on('close', this.closed);
    client.on('end', this.closed);
  }

  /** Settles like `promise`, or rejects with a DriverUnavailableError as soon as the socket it went out on closes. */
  track<T>(what: string, promise: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const fail = (): void => reject(new DriverUnavailableError(`the connection to Redis closed before ${what} was answered (it may have been applied)`));
      this.inFlight.add(fail);
      promise.then(
        (value) => {
          this.inFlight.delete(fail);
          resolve(value);
        },
        (error: unknown) => {
          this.inFlight.delete(fail);
          reject(error);
        },
      );
    });
  }

  /** Stops watching; calls still tracked settle as their promise does. */
  stop(): void {
    this.client.off('close', this.closed);
    this.client.off('end', this.closed);
  }

  private readonly closed = (): void => {
    if (this.inFlight.size === 0) return;
    const failing = [...this.inFlight];
    this.inFlight.clear();
    for (const fail of failing) fail();
  };
}
