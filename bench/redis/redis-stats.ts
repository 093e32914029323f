// Readings from the bench's redis-server: memory, CPU and per-command work.
import type { Redis } from 'ioredis';

/** "key:value" lines of an INFO section, as a map. */
export function parseInfo(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields.set(line.slice(0, colon), line.slice(colon + 1));
  }
  return fields;
}

export async function usedMemory(redis: Redis): Promise<number> {
  return Number(parseInfo(await redis.info('memory')).get('used_memory'));
}

/** Seconds of CPU the server has used, user plus system, its main thread and all. */
export async function serverCpuSeconds(redis: Redis): Promise<number> {
  const info = parseInfo(await redis.info('cpu'));
  return Number(info.get('used_cpu_user')) + Number(info.get('used_cpu_sys'));
}

export interface CommandStat {
  readonly command: string;
  readonly calls: number;
  readonly usec: number;
}

/** INFO commandstats since the last CONFIG RESETSTAT, busiest first. */
export async function commandStats(redis: Redis): Promise<CommandStat[]> {
  const stats: CommandStat[] = [];
  for (const [name, value] of parseInfo(await redis.info('commandstats'))) {
    const calls = /calls=(\d+)/.exec(value);
    const usec = /usec=(\d+)/.exec(value);
    if (calls === null || usec === null) continue;
    stats.push({ command: name.replace(/^cmdstat_/, ''), calls: Number(calls[1]), usec: Number(usec[1]) });
  }
  return stats.sort((a, b) => b.usec - a.usec);
}

/** What the server did for one measured phase: CPU and the commands behind it. */
export class ServerWork {
  private cpuAtStart = 0;

  constructor(private readonly redis: Redis) {}

  async begin(): Promise<void> {
    await this.redis.config('RESETSTAT');
    this.cpuAtStart = await serverCpuSeconds(this.redis);
  }

  async end(): Promise<{ cpuSeconds: number; commands: CommandStat[] }> {
    const cpuSeconds = (await serverCpuSeconds(this.redis)) - this.cpuAtStart;
    // Redis 7 names subcommands "config|resetstat": the bench's own readings are left out by their command.
    const commands = (await commandStats(this.redis)).filter((stat) => !['info', 'config'].includes(stat.command.split('|')[0]));
    return { cpuSeconds, commands };
  }
}

/** MEMORY USAGE of one key, every element counted. */
export async function keyBytes(redis: Redis, key: string): Promise<number> {
  const bytes = await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0');
  return Number(bytes ?? 0);
}

/** Every key in the database (the bench's databases are small enough to scan). */
export async function allKeys(redis: Redis): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'COUNT', 5000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}
