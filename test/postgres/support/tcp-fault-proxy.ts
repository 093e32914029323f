import { AddressInfo, createServer, Server, Socket, connect } from 'node:net';

/**
 * A byte-for-byte TCP proxy in front of the suite's PostgreSQL (the Redis
 * fault proxy reads RESP, which the PostgreSQL protocol is not). Faults:
 * a partition that swallows everything on the open connections, and a
 * half-open state in which the server's replies stop reaching the client
 * while its requests still get through; and a reset of the connection that
 * sent a given statement, once the server ran it (the reply lost with the
 * connection). Paused sockets keep their bytes in the kernel, so a healed
 * connection delivers what was sent, as TCP would.
 */
export class TcpFaultProxy {
  private readonly pairs = new Set<{ client: Socket; upstream: Socket }>();
  private readonly resets: Array<{ marker: string; left: number; at: number[] }> = [];

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(targetPort: number): Promise<TcpFaultProxy> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const proxy = new TcpFaultProxy(server, (server.address() as AddressInfo).port);
    server.on('connection', (client) => {
      const upstream = connect(targetPort, '127.0.0.1');
      const pair = { client, upstream };
      proxy.pairs.add(pair);
      client.pipe(upstream);
      upstream.pipe(client);
      client.on('data', (chunk: Buffer) => proxy.inspect(pair, chunk));
      const close = (): void => {
        proxy.pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on('error', close).on('close', close);
      upstream.on('error', close).on('close', close);
    });
    return proxy;
  }

  /**
   * The next `count` statements whose text holds `marker` reach the server and run; the connection
   * that sent each is reset as soon as the server starts to answer, so the reply is lost with it.
   * `at` fills with the time of each reset.
   */
  resetOnReply(marker: string, count = 1): { readonly at: readonly number[] } {
    const rule = { marker, left: count, at: [] as number[] };
    this.resets.push(rule);
    return rule;
  }

  private inspect(pair: { client: Socket; upstream: Socket }, chunk: Buffer): void {
    const rule = this.resets.find((candidate) => candidate.left > 0 && chunk.toString('latin1').includes(candidate.marker));
    if (!rule) return;
    rule.left--;
    const { client, upstream } = pair;
    upstream.unpipe(client);
    upstream.once('data', () => {
      rule.at.push(Date.now());
      client.resetAndDestroy();
      upstream.destroy();
    });
    // Unpiped, the socket is paused: it must flow for the answer to arrive.
    upstream.resume();
  }

  /** The server's replies stop reaching the client on every open connection; the client's requests still go through. */
  halfOpen(): void {
    for (const { upstream } of this.pairs) {
      upstream.unpipe();
      upstream.pause();
    }
  }

  /** Nothing passes either way on the open connections, and nothing is closed. */
  blackhole(): void {
    for (const { client, upstream } of this.pairs) {
      client.unpipe();
      upstream.unpipe();
      client.pause();
      upstream.pause();
    }
  }

  /** Open connections carry bytes again. */
  heal(): void {
    for (const { client, upstream } of this.pairs) {
      client.unpipe();
      upstream.unpipe();
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
      upstream.resume();
    }
  }

  get open(): number {
    return this.pairs.size;
  }

  async close(): Promise<void> {
    for (const { client, upstream } of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
