// The ceiling: what this redis-server can do at all with the floor's script
// (ZADD + HSET in Lua), driven by redis-benchmark (C, pipelined, no Node
// client in the way). Every Redis rate the bench prints is also given as a
// fraction of this, measured in the same run on the same server.
import { spawn, spawnSync } from 'node:child_process';
import type { Redis } from 'ioredis';
import { RAW_KEYS, RAW_LUA } from './producers';

/** REDIS_BENCHMARK_BIN points at another binary when redis-benchmark is not on PATH. */
const BINARY = process.env.REDIS_BENCHMARK_BIN ?? 'redis-benchmark';

export function redisBenchmarkVersion(): string {
  const probe = spawnSync(BINARY, ['--version'], { encoding: 'utf8' });
  if (probe.error !== undefined || probe.status !== 0) throw new Error(`"${BINARY}" was not found: install it (it comes with redis-server) or set REDIS_BENCHMARK_BIN`);
  return probe.stdout.trim();
}

export class Ceiling {
  private sha = '';
  /** Requests per run, adjusted after each run so that a run lasts about as long as asked. */
  private requests = 50_000;

  constructor(
    private readonly redis: Redis,
    private readonly port: number,
    /** Commands in flight: one connection, pipelined this deep (like a client with this many calls outstanding). */
    private readonly pipeline: number,
    private readonly payload: string,
  ) {}

  get args(): string[] {
    return ['-c', '1', '-P', String(this.pipeline), '-r', '100000000', 'EVALSHA', '<sha of the floor script>', '2', ...RAW_KEYS, '__rand_int__', 'ceil-__rand_int__', '<payload>'];
  }

  /** Runs redis-benchmark for about `durationMs`; returns its requests per second. */
  async rate(durationMs: number): Promise<number> {
    // SCRIPT FLUSH or FLUSHALL may have run in between: load again (cheap, idempotent).
    this.sha = String(await this.redis.script('LOAD', RAW_LUA));
    const args = ['-h', '127.0.0.1', '-p', String(this.port), '-c', '1', '-P', String(this.pipeline), '-n', String(this.requests), '-r', '100000000', '--csv'];
    args.push('EVALSHA', this.sha, '2', RAW_KEYS[0], RAW_KEYS[1], '__rand_int__', 'ceil-__rand_int__', this.payload);
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn(BINARY, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      const chunks: Buffer[] = [];
      const errors: Buffer[] = [];
      child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
      child.stderr.on('data', (chunk: Buffer) => errors.push(chunk));
      child.once('error', reject);
      child.once('exit', (code) => {
        if (code === 0) resolve(Buffer.concat(chunks).toString('utf8'));
        else reject(new Error(`redis-benchmark exited with ${code}: ${Buffer.concat(errors).toString('utf8')}`));
      });
    });
    // --csv: a header line, then "name","rps" and six latency columns; the name has the payload's commas in it, so count from the end.
    const fields = (output.trim().split(/\r?\n/).pop() ?? '').split(',');
    const rps = Number(fields[fields.length - 7]?.replace(/"/g, ''));
    if (!Number.isFinite(rps) || rps <= 0) throw new Error(`cannot read redis-benchmark's output: ${output}`);
    this.requests = Math.max(10_000, Math.round((rps * durationMs) / 1000));
    return rps;
  }
}
