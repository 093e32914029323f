// What each master of the bench's cluster did during one phase: commands
// (INFO commandstats, calls summed over every command) and CPU (INFO cpu,
// user plus system), over the phase's wall time.
import { performance } from 'node:perf_hooks';
import type { ClusterMaster } from './redis-cluster';
import { ServerWork } from './redis-stats';

export interface MasterWork {
  readonly name: string;
  /** Every command, those run inside scripts included. */
  readonly calls: number;
  /** EVALSHA and EVAL calls: the library's round trips that reached this master. */
  readonly scriptCalls: number;
  readonly cpuSeconds: number;
}

export interface PhaseWork {
  readonly masters: readonly MasterWork[];
  readonly wallSeconds: number;
  /** This (the bench's) process's CPU, user plus system, seconds: the client side of the phase. */
  readonly clientCpuSeconds: number;
}

export class ClusterWork {
  private readonly works: ServerWork[];
  private startedAt = 0;
  private clientCpuAtStart = process.cpuUsage();

  constructor(private readonly masters: readonly ClusterMaster[]) {
    this.works = masters.map((master) => new ServerWork(master.redis));
  }

  /** CONFIG RESETSTAT and a CPU reading on every master, then the clocks start. */
  async begin(): Promise<void> {
    await Promise.all(this.works.map((work) => work.begin()));
    this.clientCpuAtStart = process.cpuUsage();
    this.startedAt = performance.now();
  }

  async end(): Promise<PhaseWork> {
    const wallSeconds = (performance.now() - this.startedAt) / 1000;
    const cpu = process.cpuUsage(this.clientCpuAtStart);
    const ends = await Promise.all(this.works.map((work) => work.end()));
    return {
      // The bench's own INFO and CONFIG calls are left out by ServerWork.
      masters: ends.map((end, n) => ({
        name: this.masters[n].name,
        calls: end.commands.reduce((sum, stat) => sum + stat.calls, 0),
        scriptCalls: end.commands.filter((stat) => stat.command === 'evalsha' || stat.command === 'eval').reduce((sum, stat) => sum + stat.calls, 0),
        cpuSeconds: end.cpuSeconds,
      })),
      wallSeconds,
      clientCpuSeconds: (cpu.user + cpu.system) / 1e6,
    };
  }
}
