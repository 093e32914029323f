import { AddressInfo, createServer, Server, Socket, connect } from 'node:net';

/**
 * A byte-for-byte TCP proxy in front of the suite's PostgreSQL (the Redis
 * fault proxy reads RESP, which the PostgreSQL protocol is not). Faults:
 * a partition that swallows everything on the open connections; the
 * replies to a given statement held back (the connection that sent it
 * half-open from then on: its requests still get through); and a reset of
 * the connection that sent a given statement, once the server ran it (the
 * reply lost with the connection). Paused sockets keep their bytes in the
 * kernel, so a healed connection delivers what was sent, as TCP would. A
 * statement is found by its text also when it runs as a named statement
 * that was parsed earlier.
 */
export class TcpFaultProxy {
  private readonly pairs = new Set<{ client: Socket; upstream: Socket }>();
  private readonly resets: Array<{ marker: string; left: number; at: number[] }> = [];
  private readonly holds: Array<{ marker: string; left: number; at: number[] }> = [];
  /** The texts of the simple-protocol queries (Query messages) clients sent, once recordQueries() was called. */
  private recorded: string[] | undefined;
  /** Named statements seen parsed on any connection, name → text: a later run of one sends only its name. */
  private readonly named = new Map<string, string>();

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

  /**
   * The next `count` statements whose text holds `marker` reach the server and run; from then on the server's
   * replies on the connection that sent each stay in the proxy (held, not lost) until heal(). `at` fills with the
   * time of each; stop() holds no further statement (those held stay held).
   */
  holdReplies(marker: string, count = 1): { readonly at: readonly number[]; stop(): void } {
    const rule = { marker, left: count, at: [] as number[] };
    this.holds.push(rule);
    return {
      at: rule.at,
      stop: () => {
        rule.left = 0;
      },
    };
  }

  /** From now on, the text of every simple-protocol query (a Query message) any client sends, in order. */
  recordQueries(): { readonly texts: readonly string[] } {
    this.recorded = [];
    return { texts: this.recorded };
  }

  private inspect(pair: { client: Socket; upstream: Socket }, chunk: Buffer): void {
    if (this.recorded) this.recorded.push(...queryTexts(chunk));
    const text = this.withNamedTexts(chunk.toString('latin1'));
    const hold = this.holds.find((candidate) => candidate.left > 0 && text.includes(candidate.marker));
    if (hold) {
      hold.left--;
      hold.at.push(Date.now());
      pair.upstream.unpipe(pair.client);
      pair.upstream.pause();
    }
    const rule = this.resets.find((candidate) => candidate.left > 0 && text.includes(candidate.marker));
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

  /**
   * The chunk's text, and that of each named statement it runs. The driver prepares the statements it sends
   * most: a Parse message carries the name and the text once per connection, later runs (Bind) the name only.
   */
  private withNamedTexts(text: string): string {
    // A Parse message: the statement's name, NUL, its text, NUL (names are the driver's, nestjs_delay_ and a hash).
    for (const [, name, sql] of text.matchAll(/(nestjs_delay_[0-9a-f]{20})\x00([^\x00]{20,})\x00/g)) if (!this.named.has(name)) this.named.set(name, sql);
    const runs = [...text.matchAll(/nestjs_delay_[0-9a-f]{20}/g)].map(([name]) => this.named.get(name) ?? '');
    return [text, ...runs].join('\n');
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

/** The texts of the Query messages ('Q', length, text, NUL) a chunk holds whole; anything else is skipped by its length. */
function queryTexts(chunk: Buffer): string[] {
  const texts: string[] = [];
  for (let at = 0; at + 5 <= chunk.length; ) {
    const length = chunk.readUInt32BE(at + 1);
    if (length < 4 || at + 1 + length > chunk.length) break;
    if (chunk[at] === 0x51) texts.push(chunk.toString('utf8', at + 5, at + length));
    at += 1 + length;
  }
  return texts;
}
