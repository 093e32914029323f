// What a bench worker process records: per run, its key, due time, handler
// start and end on this machine's clock, with the process's CPU and event-loop
// lag since it was ready. Shared by the Redis, recurring and PostgreSQL benches' workers.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { WorkerReport } from './protocol';

const LOOP_RESOLUTION_MS = 10;

export class Recorder {
  private readonly keys: string[] = [];
  private readonly dueAt: number[] = [];
  private readonly start: number[] = [];
  private readonly end: number[] = [];
  private cpuAtReady = process.cpuUsage();
  private readonly loopDelay = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });

  get done(): number {
    return this.end.length;
  }

  /** With `monitorLoop` false, no event-loop timer runs (its 10 ms wake-ups would count in the CPU of an idle process). */
  ready(monitorLoop = true): void {
    this.cpuAtReady = process.cpuUsage();
    if (monitorLoop) this.loopDelay.enable();
  }

  /** The handler's whole work: note when it started and ended. */
  run(key: string, dueAt: number): void {
    this.start.push(Date.now());
    this.keys.push(key);
    this.dueAt.push(dueAt);
    this.end.push(Date.now());
  }

  report(): WorkerReport {
    const cpu = process.cpuUsage(this.cpuAtReady);
    // The histogram records whole intervals of its 10 ms timer: what is beyond 10 ms is lag.
    const ms = (nanoseconds: number): number => Math.max(0, nanoseconds / 1e6 - LOOP_RESOLUTION_MS);
    const { loopDelay } = this;
    return {
      keys: this.keys,
      dueAt: this.dueAt,
      start: this.start,
      end: this.end,
      cpuMicros: cpu.user + cpu.system,
      loopDelay: { p50: ms(loopDelay.percentile(50)), p99: ms(loopDelay.percentile(99)), max: ms(loopDelay.max) },
    };
  }
}
