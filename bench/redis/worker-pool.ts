// Forks worker processes (worker.ts, compiled) and gathers what they saw.
import { ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import type { ParentMessage, WorkerMessage, WorkerReport } from './protocol';

const WORKER_SCRIPT = join(__dirname, 'worker.js');
const READY_TIMEOUT_MS = 30_000;

class WorkerProcess {
  done = 0;
  private readonly waiters = new Map<WorkerMessage['type'], (message: WorkerMessage) => void>();
  private failure: Error | undefined;

  constructor(readonly child: ChildProcess) {
    child.on('message', (message: WorkerMessage) => {
      if (message.type === 'progress') this.done = message.done;
      if (message.type === 'failed') this.failure = new Error(`worker failed: ${message.error}`);
      this.waiters.get(message.type)?.(message);
    });
    child.on('exit', (code) => {
      if (code !== 0 && this.failure === undefined) this.failure = new Error(`worker exited with ${code}`);
    });
  }

  check(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  async next<T extends WorkerMessage['type']>(type: T, timeoutMs: number): Promise<Extract<WorkerMessage, { type: T }>> {
    const deadline = Date.now() + timeoutMs;
    return new Promise((resolve, reject) => {
      const timer = setInterval(() => {
        if (this.failure !== undefined || Date.now() > deadline) {
          clearInterval(timer);
          this.waiters.delete(type);
          reject(this.failure ?? new Error(`worker sent no "${type}" within ${timeoutMs} ms`));
        }
      }, 50);
      this.waiters.set(type, (message) => {
        clearInterval(timer);
        this.waiters.delete(type);
        resolve(message as Extract<WorkerMessage, { type: T }>);
      });
    });
  }

  send(message: ParentMessage): void {
    this.child.send(message);
  }
}

export class WorkerPool {
  private constructor(private readonly workers: WorkerProcess[]) {}

  /**
   * Forks `count` workers of `script` (default: the Redis bench's worker) with `config` as their one argument,
   * and waits until each consumes. BENCH_REDIS_CPU_PROF=<dir> (or `profileDir`) profiles them.
   */
  static async start<C extends { readonly kind: string }>(count: number, config: C, script = WORKER_SCRIPT, profileDir = process.env.BENCH_REDIS_CPU_PROF): Promise<WorkerPool> {
    const workers: WorkerProcess[] = [];
    for (let n = 0; n < count; n++) {
      const name = `${config.kind}-${count}w-${n + 1}-${Date.now()}.cpuprofile`;
      const execArgv = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name}`] : [];
      const child = fork(script, [JSON.stringify(config)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv });
      workers.push(new WorkerProcess(child));
    }
    const pool = new WorkerPool(workers);
    try {
      await Promise.all(workers.map((worker) => worker.next('ready', READY_TIMEOUT_MS)));
    } catch (error) {
      await pool.stop();
      throw error;
    }
    return pool;
  }

  get done(): number {
    let done = 0;
    for (const worker of this.workers) {
      worker.check();
      done += worker.done;
    }
    return done;
  }

  /** Resolves once `count` runs finished in all, or at `deadline` (epoch ms), whichever is first. */
  async waitForDone(count: number, deadline: number): Promise<void> {
    while (this.done < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  }

  async reports(): Promise<WorkerReport[]> {
    return Promise.all(
      this.workers.map(async (worker) => {
        const reply = worker.next('report', 30_000);
        worker.send({ type: 'report' });
        return (await reply).report;
      }),
    );
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.workers.map(
        (worker) =>
          new Promise<void>((resolve) => {
            const { child } = worker;
            if (child.exitCode !== null || child.signalCode !== null) {
              resolve();
              return;
            }
            const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
            child.once('exit', () => {
              clearTimeout(killer);
              resolve();
            });
            if (child.connected) worker.send({ type: 'stop' });
            else child.kill('SIGTERM');
          }),
      ),
    );
  }
}
