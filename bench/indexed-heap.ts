/**
 * The reference a careful user would write instead of a timer per action: a
 * binary min-heap of due times, stored as two parallel arrays, with a
 * Map<key, heap index> so an action can be found and removed by key in
 * O(log n). One setTimeout is armed for the earliest due time.
 */
export class IndexedMinHeap {
  private readonly keys: string[] = [];
  private readonly due: number[] = [];
  private readonly indexOf = new Map<string, number>();

  get size(): number {
    return this.keys.length;
  }

  /** The earliest due time, or Infinity when empty. */
  minDue(): number {
    return this.keys.length === 0 ? Infinity : this.due[0];
  }

  /** Adds `key` due at `dueAt`, or moves it there if it is already in the heap. */
  set(key: string, dueAt: number): void {
    const at = this.indexOf.get(key);
    if (at === undefined) {
      const end = this.keys.length;
      this.keys.push(key);
      this.due.push(dueAt);
      this.siftUp(end, key, dueAt);
    } else if (dueAt < this.due[at]) {
      this.siftUp(at, key, dueAt);
    } else {
      this.siftDown(at, key, dueAt);
    }
  }

  /** Removes `key`; false if it was not in the heap. */
  delete(key: string): boolean {
    const at = this.indexOf.get(key);
    if (at === undefined) return false;
    this.indexOf.delete(key);
    const lastKey = this.keys.pop() as string;
    const lastDue = this.due.pop() as number;
    if (at < this.keys.length) {
      // The last entry fills the hole; it may belong above or below it.
      if (at > 0 && lastDue < this.due[(at - 1) >> 1]) this.siftUp(at, lastKey, lastDue);
      else this.siftDown(at, lastKey, lastDue);
    }
    return true;
  }

  /** Removes and returns the key with the earliest due time. */
  pop(): string | undefined {
    if (this.keys.length === 0) return undefined;
    const top = this.keys[0];
    this.indexOf.delete(top);
    const lastKey = this.keys.pop() as string;
    const lastDue = this.due.pop() as number;
    if (this.keys.length > 0) this.siftDown(0, lastKey, lastDue);
    return top;
  }

  /** Moves the hole at `at` up until `key` fits there, then places it. */
  private siftUp(at: number, key: string, dueAt: number): void {
    const { keys, due, indexOf } = this;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (due[parent] <= dueAt) break;
      keys[at] = keys[parent];
      due[at] = due[parent];
      indexOf.set(keys[at], at);
      at = parent;
    }
    keys[at] = key;
    due[at] = dueAt;
    indexOf.set(key, at);
  }

  /** Moves the hole at `at` down until `key` fits there, then places it. */
  private siftDown(at: number, key: string, dueAt: number): void {
    const { keys, due, indexOf } = this;
    const size = keys.length;
    for (;;) {
      let child = 2 * at + 1;
      if (child >= size) break;
      if (child + 1 < size && due[child + 1] < due[child]) child++;
      if (due[child] >= dueAt) break;
      keys[at] = keys[child];
      due[at] = due[child];
      indexOf.set(keys[at], at);
      at = child;
    }
    keys[at] = key;
    due[at] = dueAt;
    indexOf.set(key, at);
  }
}

/**
 * The heap with one process timer: armed for the earliest due time, it runs
 * every due callback when it fires. Cancelling is lazy about the timer (a
 * timer that fires for nothing just re-arms). Delays must stay below
 * setTimeout's 2^31 ms limit: enough for a benchmark of delays up to an hour.
 */
export class HeapTimer {
  private readonly heap = new IndexedMinHeap();
  private timer: NodeJS.Timeout | undefined;
  private armedFor = Infinity;

  constructor(private readonly onDue: (key: string) => void) {}

  get size(): number {
    return this.heap.size;
  }

  schedule(key: string, delayMs: number): void {
    this.scheduleAt(key, Date.now() + delayMs);
  }

  scheduleAt(key: string, dueAt: number): void {
    this.heap.set(key, dueAt);
    if (dueAt < this.armedFor) this.arm(dueAt);
  }

  cancel(key: string): boolean {
    return this.heap.delete(key);
  }

  close(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = Infinity;
  }

  private arm(dueAt: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.armedFor = dueAt;
    this.timer = setTimeout(() => this.fire(), Math.max(0, dueAt - Date.now()));
  }

  private fire(): void {
    this.timer = undefined;
    this.armedFor = Infinity;
    const now = Date.now();
    const { heap } = this;
    while (heap.size > 0 && heap.minDue() <= now) this.onDue(heap.pop() as string);
    if (heap.size > 0) this.arm(heap.minDue());
  }
}
