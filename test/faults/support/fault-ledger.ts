/**
 * What a fault test counts: every acknowledged arming, every acknowledged
 * cancel and every handler run, and from them scheduled / fired / fired
 * twice / lost / early / fired after an acknowledged cancel.
 */

export interface FaultRun {
  readonly topic: string;
  readonly key: string;
  readonly dueAt: number;
  /** When the run was claimed, as the context says. */
  readonly firedAt: number;
  /** The local clock when the handler started. */
  readonly startedAt: number;
  readonly attempt: number;
  readonly items?: readonly unknown[];
}

interface Arming {
  readonly topic: string;
  readonly key: string;
  readonly dueAt: number;
  readonly note: string;
  cancelledAt?: number;
  forgiven?: string;
  runs: FaultRun[];
}

export interface FaultTally {
  readonly scheduled: number;
  readonly fired: number;
  /** Armings that ran more than once. */
  readonly firedTwice: number;
  readonly lost: number;
  readonly early: number;
  readonly firedAfterCancel: number;
  /** Armings lost that the test said it expected to lose (e.g. Redis restarted empty). */
  readonly forgiven: number;
  /** Runs of no acknowledged arming (a schedule that rejected but had been applied, or worse). */
  readonly unknownRuns: number;
  /** One line per problem, for the failure message. */
  readonly details: string[];
}

const id = (topic: string, key: string): string => `${topic}\u0000${key}`;

export class FaultLedger {
  readonly runs: FaultRun[] = [];
  private readonly armings = new Map<string, Arming[]>();
  /** Keys whose schedule call failed: it may or may not have been applied. */
  private readonly uncertain = new Set<string>();

  /** An arming the driver acknowledged (a resolved schedule, collect or reschedule). */
  armed(topic: string, key: string, dueAt: Date | number, note = ''): void {
    const arming: Arming = { topic, key, dueAt: typeof dueAt === 'number' ? dueAt : dueAt.getTime(), note, runs: [] };
    const list = this.armings.get(id(topic, key)) ?? [];
    list.push(arming);
    this.armings.set(id(topic, key), list);
    for (const run of this.runs) if (run.topic === topic && run.key === key && run.dueAt === arming.dueAt) arming.runs.push(run);
  }

  /** A schedule call that rejected: its action may exist, so a run of it is no violation. */
  failedCall(topic: string, key: string): void {
    this.uncertain.add(id(topic, key));
  }

  /** A cancel that resolved true: no run may start after it was issued. */
  cancelled(topic: string, key: string, issuedAt: number): void {
    for (const arming of this.armings.get(id(topic, key)) ?? []) if (arming.cancelledAt === undefined) arming.cancelledAt = issuedAt;
  }

  /** The test expects these armings to be lost (and says why): they count as forgiven, not lost. */
  forgive(reason: string, which: (topic: string, key: string, dueAt: number) => boolean): void {
    for (const list of this.armings.values()) for (const arming of list) if (which(arming.topic, arming.key, arming.dueAt)) arming.forgiven = reason;
  }

  /** Called by the handlers. */
  ran(run: FaultRun): void {
    this.runs.push(run);
    const arming = this.armingOf(run);
    arming?.runs.push(run);
  }

  runsOf(topic: string, key?: string): FaultRun[] {
    return this.runs.filter((run) => run.topic === topic && (key === undefined || run.key === key));
  }

  tally(): FaultTally {
    const details: string[] = [];
    let scheduled = 0;
    let fired = 0;
    let firedTwice = 0;
    let lost = 0;
    let early = 0;
    let firedAfterCancel = 0;
    let forgiven = 0;
    for (const list of this.armings.values()) {
      for (const arming of list) {
        scheduled++;
        const name = `${arming.topic}/${arming.key}@${arming.dueAt}${arming.note ? ` (${arming.note})` : ''}`;
        if (arming.runs.length > 0) fired++;
        if (arming.runs.length > 1) {
          firedTwice++;
          details.push(`${name} ran ${arming.runs.length} times: attempts ${arming.runs.map((run) => run.attempt).join(', ')}`);
        }
        for (const run of arming.runs) {
          if (run.startedAt < arming.dueAt || run.firedAt < arming.dueAt) {
            early++;
            details.push(`${name} ran ${arming.dueAt - Math.min(run.startedAt, run.firedAt)} ms early`);
          }
          if (arming.cancelledAt !== undefined && run.firedAt >= arming.cancelledAt) {
            firedAfterCancel++;
            details.push(`${name} was claimed at ${run.firedAt}, after a cancel issued at ${arming.cancelledAt} returned true`);
          }
        }
        const superseded = list.indexOf(arming) < list.length - 1;
        if (arming.runs.length === 0 && arming.cancelledAt === undefined && !superseded) {
          if (arming.forgiven) {
            forgiven++;
          } else {
            lost++;
            if (lost <= 10) details.push(`${name} never ran (lost)`);
          }
        }
      }
    }
    let unknownRuns = 0;
    for (const run of this.runs) {
      if (this.armingOf(run) || this.uncertain.has(id(run.topic, run.key))) continue;
      unknownRuns++;
      if (unknownRuns <= 10) details.push(`a run of ${run.topic}/${run.key}@${run.dueAt} (attempt ${run.attempt}) that no acknowledged call armed`);
    }
    if (lost > 10) details.push(`... and ${lost - 10} more lost`);
    return { scheduled, fired, firedTwice, lost, early, firedAfterCancel, forgiven, unknownRuns, details };
  }

  private armingOf(run: FaultRun): Arming | undefined {
    const list = this.armings.get(id(run.topic, run.key)) ?? [];
    for (let n = list.length - 1; n >= 0; n--) if (list[n].dueAt === run.dueAt) return list[n];
    return undefined;
  }
}
