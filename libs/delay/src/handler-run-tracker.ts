import { HandlerRun } from './handler-run';

/** Runs with one timeout, oldest first: their deadlines ascend, so only the head can be due. */
class RunList {
  head: HandlerRun | null = null;
  tail: HandlerRun | null = null;
}

/**
 * The handler runs going on in this process, and the one timer that gives
 * up those that outlive their timeout. Runs are kept in a list per timeout
 * value; each list is in start order, so its deadlines ascend and the timer
 * only ever looks at the lists' heads. Adding and removing a run is O(1),
 * with no timer of its own: a burst of runs costs one timer, not one each.
 * While no run is going on, the timer (if any) is unref'd: it then fires
 * once for nothing, and never holds the process open.
 */
export class HandlerRunTracker {
  private readonly lists = new Map<number | undefined, RunList>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private count = 0;
  /** The list last used and its timeout: nearly every run of a process has the same one, so most runs skip the Map. */
  private lastTimeoutMs: number | undefined = undefined;
  private lastList: RunList | undefined;

  constructor(private readonly onTimeout: (run: HandlerRun) => void) {}

  get size(): number {
    return this.count;
  }

  add(run: HandlerRun): void {
    const list = this.listOf(run.timeoutMs);
    run.prev = list.tail;
    if (list.tail) list.tail.next = run;
    else list.head = run;
    list.tail = run;
    this.count++;
    if (this.count === 1) this.timer?.ref();
    if (run.deadline < this.timerAt) this.arm(run.deadline);
  }

  remove(run: HandlerRun): void {
    const list = this.listOf(run.timeoutMs);
    if (run.prev) run.prev.next = run.next;
    else list.head = run.next;
    if (run.next) run.next.prev = run.prev;
    else list.tail = run.prev;
    run.prev = null;
    run.next = null;
    this.count--;
    // Left armed (one timer for many runs, not one set and cleared per run: handlers that settle at
    // once would otherwise pay for both every time), but it no longer keeps the process alive.
    if (this.count === 0) this.timer?.unref();
  }

  /**
   * The run's timeout counts again from now (a transactional run whose
   * handler finished, waiting for a commit it shares with later runs). It
   * goes to the end of its list, whose deadlines still ascend: the others
   * started earlier with the same timeout.
   */
  restart(run: HandlerRun): void {
    if (run.timeoutMs === undefined) return;
    this.remove(run);
    run.deadline = performance.now() + run.timeoutMs;
    this.add(run);
  }

  /** Removes and returns every run (shutdown). */
  takeAll(): HandlerRun[] {
    const runs: HandlerRun[] = [];
    for (const list of this.lists.values()) {
      for (let run = list.head; run; run = run.next) runs.push(run);
      list.head = null;
      list.tail = null;
    }
    for (const run of runs) {
      run.prev = null;
      run.next = null;
    }
    this.count = 0;
    this.disarm();
    return runs;
  }

  private listOf(timeoutMs: number | undefined): RunList {
    if (timeoutMs === this.lastTimeoutMs && this.lastList !== undefined) return this.lastList;
    let list = this.lists.get(timeoutMs);
    if (!list) {
      list = new RunList();
      this.lists.set(timeoutMs, list);
    }
    this.lastTimeoutMs = timeoutMs;
    this.lastList = list;
    return list;
  }

  private arm(at: number): void {
    this.disarm();
    this.timerAt = at;
    // Timers count whole ms: round up, so the timer never fires before the deadline it was set for.
    this.timer = setTimeout(() => this.expire(), Math.max(1, Math.ceil(at - performance.now())));
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private expire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = performance.now();
    let next = Infinity;
    for (const list of this.lists.values()) {
      while (list.head && list.head.deadline <= now) {
        const run = list.head;
        this.remove(run);
        this.onTimeout(run);
      }
      if (list.head && list.head.deadline < next) next = list.head.deadline;
    }
    if (next !== Infinity) this.arm(next);
  }
}
