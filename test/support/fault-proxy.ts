import { AddressInfo, createServer, Server, Socket, connect } from 'node:net';
import { readResp } from './resp-reader';

/** Which connections a fault applies to: every one, the pub/sub ones (they sent SUBSCRIBE), or the others. */
export type ConnectionFilter = 'all' | 'subscribers' | 'commands';

/** A command as the client sent it: its words, the first lower-cased. */
export type CommandMatcher = (words: readonly string[]) => boolean;

/**
 * When a matching command is seen: `before` resets the connection instead of
 * forwarding it (Redis never runs it); `after-reply` forwards it and resets
 * the connection once Redis has answered, before the reply reaches the client
 * (Redis ran it, the client never learns).
 */
export type CommandFault = 'before' | 'after-reply';

interface Rule {
  readonly matches: CommandMatcher;
  readonly fault: CommandFault | (() => CommandFault);
  left: number;
  readonly seen: CommandFault[];
}

/** One client connection and its upstream connection to Redis. */
class Pair {
  subscriber = false;
  closed = false;
  /** Bytes from the client not yet read as whole commands. */
  private fromClient: Buffer = Buffer.alloc(0);
  /** Bytes from Redis not yet read as whole replies. */
  private fromServer: Buffer = Buffer.alloc(0);
  /** Per command sent upstream, in order: whether to reset instead of forwarding its reply. */
  private readonly awaiting: boolean[] = [];
  /** Client bytes that are not RESP: passed on as they are, with no more parsing. */
  private raw = false;

  constructor(
    readonly client: Socket,
    readonly upstream: Socket,
    private readonly proxy: FaultProxy,
  ) {}

  onClientData(chunk: Buffer): void {
    if (this.closed) return;
    if (this.raw) {
      this.upstream.write(chunk);
      return;
    }
    this.fromClient = this.fromClient.length ? Buffer.concat([this.fromClient, chunk]) : chunk;
    let start = 0;
    for (;;) {
      let value;
      try {
        value = readResp(this.fromClient, start, true);
      } catch {
        this.raw = true;
        this.upstream.write(this.fromClient.subarray(start));
        this.fromClient = Buffer.alloc(0);
        return;
      }
      if (!value) break;
      const words = value.words ?? [];
      if (words.length > 0) words[0] = words[0].toLowerCase();
      if (words[0] === 'subscribe' || words[0] === 'psubscribe' || words[0] === 'ssubscribe') this.subscriber = true;
      const fault = this.subscriber ? undefined : this.proxy.faultFor(words);
      if (fault === 'before') {
        this.proxy.resetPair(this);
        return;
      }
      if (!this.subscriber) this.awaiting.push(fault === 'after-reply');
      this.upstream.write(this.fromClient.subarray(start, value.end));
      start = value.end;
    }
    this.fromClient = this.fromClient.subarray(start);
  }

  onServerData(chunk: Buffer): void {
    if (this.closed) return;
    // Pub/sub replies are not answers to commands one for one: pass them on as they come.
    if (this.subscriber || this.raw) {
      this.client.write(chunk);
      return;
    }
    this.fromServer = this.fromServer.length ? Buffer.concat([this.fromServer, chunk]) : chunk;
    let start = 0;
    for (;;) {
      let value;
      try {
        value = readResp(this.fromServer, start);
      } catch {
        this.raw = true;
        this.client.write(this.fromServer.subarray(start));
        this.fromServer = Buffer.alloc(0);
        return;
      }
      if (!value) break;
      const drop = this.awaiting.shift() ?? false;
      if (drop) {
        this.proxy.resetPair(this);
        return;
      }
      this.client.write(this.fromServer.subarray(start, value.end));
      start = value.end;
    }
    this.fromServer = this.fromServer.subarray(start);
  }
}

/**
 * A TCP proxy of the suite's own between the app and the suite's
 * redis-server, which injects network faults on command: resets, a
 * partition that swallows everything silently, a half-open connection, lost
 * replies, refused connections. Paused sockets keep their bytes in the
 * kernel, so a healed partition delivers what was sent, as TCP would.
 */
export class FaultProxy {
  /** Connections accepted since start. */
  accepted = 0;
  /** Connections reset or refused by a fault. */
  resets = 0;
  /** When each connection was accepted (Date.now()), in order: a client's reconnect is the first after a reset. */
  readonly acceptedAt: number[] = [];
  /** When each open connection was reset by a fault (Date.now()), in order. */
  readonly resetAt: number[] = [];
  private readonly pairs = new Set<Pair>();
  private readonly rules: Rule[] = [];
  private mode: 'forward' | 'blackhole' | 'refuse' = 'forward';
  /** Client sockets held while partitioned, connected upstream on heal. */
  private readonly held = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  static async start(targetPort: number, targetHost = '127.0.0.1'): Promise<FaultProxy> {
    const server = createServer({ pauseOnConnect: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const proxy = new FaultProxy(server, (server.address() as AddressInfo).port, { host: targetHost, port: targetPort });
    server.on('connection', (socket) => proxy.onConnection(socket));
    return proxy;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Open connection pairs (a partitioned new connection counts once it is let through). */
  get open(): number {
    return this.pairs.size;
  }

  /** Open pairs that subscribed to a channel. */
  get subscribers(): number {
    return [...this.pairs].filter((pair) => pair.subscriber).length;
  }

  /** Sends an RST both ways on every open connection. Returns how many were reset. */
  reset(filter: ConnectionFilter = 'all'): number {
    const chosen = this.select(filter);
    for (const pair of chosen) this.resetPair(pair);
    return chosen.length;
  }

  /** A partition: nothing passes either way, nothing answers, no socket is closed. New connections hang. */
  blackhole(filter: ConnectionFilter = 'all'): void {
    if (filter === 'all') this.mode = 'blackhole';
    for (const pair of this.select(filter)) {
      pair.client.pause();
      pair.upstream.pause();
    }
  }

  /** Redis's replies stop reaching the client on the chosen open connections; the client's commands still go through. */
  halfOpen(filter: ConnectionFilter = 'all'): void {
    for (const pair of this.select(filter)) pair.upstream.pause();
  }

  /** New connections are closed at once (RST); open ones carry on. */
  refuse(): void {
    this.mode = 'refuse';
  }

  /** Ends every partition and refusal: held bytes flow again, held connections go through. */
  heal(): void {
    this.mode = 'forward';
    for (const pair of this.pairs) {
      pair.client.resume();
      pair.upstream.resume();
    }
    for (const socket of [...this.held]) {
      this.held.delete(socket);
      this.pipe(socket);
    }
  }

  /**
   * Injects a fault on the next `times` commands that match. `fault` may be
   * a function, e.g. a seeded random choice per occurrence. Returns what was
   * done, in order, as it happens.
   */
  onCommand(matches: CommandMatcher, fault: CommandFault | (() => CommandFault), times = 1): CommandFault[] {
    const rule: Rule = { matches, fault, left: times, seen: [] };
    this.rules.push(rule);
    return rule.seen;
  }

  /** Loses the reply to the next `times` matching commands, after Redis ran them. */
  dropReplies(matches: CommandMatcher, times = 1): CommandFault[] {
    return this.onCommand(matches, 'after-reply', times);
  }

  /** Forgets every command rule that has not fired yet. */
  clearRules(): void {
    this.rules.length = 0;
  }

  async close(): Promise<void> {
    this.clearRules();
    for (const pair of [...this.pairs]) this.destroyPair(pair);
    for (const socket of this.held) socket.destroy();
    this.held.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** @internal The fault for a command the client sent, if a rule wants one. */
  faultFor(words: readonly string[]): CommandFault | undefined {
    for (const rule of this.rules) {
      if (rule.left <= 0 || !rule.matches(words)) continue;
      rule.left--;
      const fault = typeof rule.fault === 'function' ? rule.fault() : rule.fault;
      rule.seen.push(fault);
      if (rule.left === 0) this.rules.splice(this.rules.indexOf(rule), 1);
      return fault;
    }
    return undefined;
  }

  /** @internal */
  resetPair(pair: Pair): void {
    if (pair.closed) return;
    this.resets++;
    this.resetAt.push(Date.now());
    pair.closed = true;
    this.pairs.delete(pair);
    pair.client.resetAndDestroy();
    pair.upstream.resetAndDestroy();
  }

  private destroyPair(pair: Pair): void {
    pair.closed = true;
    this.pairs.delete(pair);
    pair.client.destroy();
    pair.upstream.destroy();
  }

  private select(filter: ConnectionFilter): Pair[] {
    return [...this.pairs].filter((pair) => filter === 'all' || (filter === 'subscribers') === pair.subscriber);
  }

  private onConnection(socket: Socket): void {
    this.accepted++;
    this.acceptedAt.push(Date.now());
    socket.on('error', () => undefined);
    if (this.mode === 'refuse') {
      this.resets++;
      socket.resetAndDestroy();
      return;
    }
    if (this.mode === 'blackhole') {
      this.held.add(socket);
      socket.once('close', () => this.held.delete(socket));
      return;
    }
    this.pipe(socket);
  }

  private pipe(client: Socket): void {
    if (client.destroyed) return;
    const upstream = connect(this.target.port, this.target.host);
    upstream.setNoDelay(true);
    client.setNoDelay(true);
    const pair = new Pair(client, upstream, this);
    this.pairs.add(pair);
    upstream.on('error', () => undefined);
    client.on('data', (chunk: Buffer) => pair.onClientData(chunk));
    upstream.on('data', (chunk: Buffer) => pair.onServerData(chunk));
    // One side closing closes the other, as a plain TCP path would.
    const end = (): void => {
      if (pair.closed) return;
      pair.closed = true;
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end);
    upstream.on('close', end);
    client.resume();
  }
}

/** Matches calls of one of the driver's Lua scripts, by SHA1 (EVALSHA) or by source (EVAL). */
export function scriptMatcher(scripts: ReadonlyArray<{ sha: string; lua: string }>): CommandMatcher {
  const shas = new Set(scripts.map((script) => script.sha.toLowerCase()));
  const sources = new Set(scripts.map((script) => script.lua));
  return (words) => (words[0] === 'evalsha' && shas.has((words[1] ?? '').toLowerCase())) || (words[0] === 'eval' && sources.has(words[1] ?? ''));
}
