import { AddressInfo, createServer, Server, Socket, connect } from 'node:net';

/**
 * A byte-for-byte TCP proxy in front of the suite's PostgreSQL (the Redis
 * fault proxy reads RESP, which the PostgreSQL protocol is not). Faults:
 * a partition that swallows everything on the open connections, and a
 * half-open state in which the server's replies stop reaching the client
 * while its requests still get through. Paused sockets keep their bytes in
 * the kernel, so a healed connection delivers what was sent, as TCP would.
 */
export class TcpFaultProxy {
  private readonly pairs = new Set<{ client: Socket; upstream: Socket }>();

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
