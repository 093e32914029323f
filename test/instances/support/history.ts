// Checks one key's history in the randomised test: the calls made on it (one
// after another, from any producer) against the handler runs the consumers
// reported. See randomised.e2e-spec.ts for what is asserted and why.
import type { ActionSnapshot, ReplyValue, StartEvent } from './protocol';

/** replace and keep are schedule calls with ifExists 'replace' / 'keep'. */
export type OpKind = 'replace' | 'keep' | 'reschedule' | 'cancel';

export interface OpRecord {
  readonly key: string;
  readonly index: number;
  readonly kind: OpKind;
  readonly producer: string;
  /** The arming id a schedule sent (reschedule and cancel send none). */
  readonly armId?: string;
  /** The due time a schedule or reschedule asked for, epoch ms. */
  readonly at?: number;
  /** Taken in the producer process just before the DelayService call and just after it resolved. */
  readonly issuedAt: number;
  readonly returnedAt: number;
  readonly result: ReplyValue;
}

/** One arming at one due time: a schedule, or a reschedule of an arming, makes a new one. */
interface Version {
  readonly armId: string;
  readonly dueAt: number;
  readonly createdBy: OpRecord;
  /** The call that replaced, moved or removed it; `found` false when it was already gone (it had run). */
  end?: { readonly op: OpRecord; readonly found: boolean | 'unknown' };
}

export interface KeyVerdict {
  readonly violations: string[];
  readonly versions: number;
  readonly runs: number;
  /** Armings removed or superseded before they ran (cancel, replace, reschedule, before the due time or in a race). */
  readonly neverRan: number;
  /** Armings a cancel or reschedule found (so not yet acked) after they had been claimed: removed or moved while running. */
  readonly removedWhileRunning: number;
  /** Runs whose handler started after the call that removed the arming returned, but whose claim came before it: the documented race. */
  readonly startedAfterRemovalReturned: number;
  /** Claim time minus due time (or minus the arming call, for a due time in the past), ms, per run. */
  readonly lateness: number[];
}

const describeOp = (op: OpRecord): string => `#${op.index} ${op.kind} via ${op.producer} (issued ${op.issuedAt}, returned ${op.returnedAt})`;

export function checkKeyHistory(key: string, ops: readonly OpRecord[], starts: readonly StartEvent[], lateLimitMs: number): KeyVerdict {
  const violations: string[] = [];
  const fail = (text: string): void => {
    violations.push(`${key}: ${text}`);
  };
  const versions: Version[] = [];
  let current: Version | undefined;
  const endCurrent = (op: OpRecord, found: boolean | 'unknown'): void => {
    if (current) current.end = { op, found };
    current = undefined;
  };
  const arm = (snapshot: ActionSnapshot, op: OpRecord): void => {
    const version: Version = { armId: String(snapshot.armId), dueAt: snapshot.dueAt, createdBy: op };
    versions.push(version);
    current = version;
  };
  const snapshotOf = (op: OpRecord): ActionSnapshot | undefined => {
    const value = op.result;
    if (value !== null && typeof value === 'object') return value;
    return undefined;
  };

  // Replay the calls: which arming each call made, moved or ended, as the driver's replies tell it.
  for (const op of ops) {
    const snapshot = snapshotOf(op);
    switch (op.kind) {
      case 'replace':
        if (!snapshot || snapshot.armId !== op.armId || snapshot.dueAt !== op.at) {
          fail(`${describeOp(op)} returned ${JSON.stringify(op.result)}, not the arming it made`);
          break;
        }
        endCurrent(op, 'unknown');
        arm(snapshot, op);
        break;
      case 'keep':
        if (!snapshot) {
          fail(`${describeOp(op)} returned ${JSON.stringify(op.result)}`);
        } else if (snapshot.armId === op.armId) {
          // Created: whatever was pending before had finished.
          if (snapshot.dueAt !== op.at) fail(`${describeOp(op)} created an arming due ${snapshot.dueAt}, asked ${op.at}`);
          endCurrent(op, false);
          arm(snapshot, op);
        } else if (!current || snapshot.armId !== current.armId || snapshot.dueAt !== current.dueAt) {
          fail(`${describeOp(op)} kept ${JSON.stringify(snapshot)}, but the pending arming is ${current ? `${current.armId}@${current.dueAt}` : 'none'}`);
        }
        break;
      case 'reschedule':
        if (op.result === null) {
          endCurrent(op, false);
        } else if (!snapshot || !current || snapshot.armId !== current.armId || snapshot.dueAt !== op.at) {
          fail(`${describeOp(op)} returned ${JSON.stringify(op.result)}, but the pending arming is ${current ? `${current.armId}@${current.dueAt}` : 'none'}`);
        } else {
          endCurrent(op, true);
          arm(snapshot, op);
        }
        break;
      case 'cancel':
        if (op.result === true) {
          if (!current) fail(`${describeOp(op)} removed an action although none was pending`);
          endCurrent(op, true);
        } else {
          endCurrent(op, false);
        }
        break;
    }
  }

  // Attribute each run to its arming by (arming id, due time): due times are unique per key.
  const runsOf = new Map<Version, StartEvent[]>(versions.map((version) => [version, []]));
  for (const start of starts) {
    const version = versions.find((candidate) => candidate.armId === start.armId && candidate.dueAt === start.dueAt);
    if (!version) fail(`a run of ${start.armId}@${start.dueAt} on ${start.instance}, an arming no call made`);
    else runsOf.get(version)?.push(start);
  }

  let neverRan = 0;
  let removedWhileRunning = 0;
  let startedAfterRemovalReturned = 0;
  const lateness: number[] = [];
  for (const version of versions) {
    const runs = runsOf.get(version) ?? [];
    const name = `${version.armId}@${version.dueAt}`;
    if (runs.length > 1) fail(`${name} ran ${runs.length} times with no crash: ${runs.map((run) => `${run.instance}#${run.attempt} claimed ${run.firedAt}`).join(', ')}`);
    // An arming due before its call was even made (an `at` in the past) is late only from that call on.
    const dueFrom = Math.max(version.dueAt, version.createdBy.issuedAt);
    for (const run of runs) {
      lateness.push(run.firedAt - dueFrom);
      if (run.firedAt < version.dueAt || run.at < version.dueAt) fail(`${name} ran early: claimed ${run.firedAt}, handler ${run.at}`);
      if (run.firedAt < version.createdBy.issuedAt) fail(`${name} was claimed at ${run.firedAt}, before ${describeOp(version.createdBy)} was even issued`);
      if (run.attempt !== 1) fail(`${name} ran as attempt ${run.attempt} with no crash and no failure`);
      if (run.firedAt - dueFrom > lateLimitMs) fail(`${name} was claimed ${run.firedAt - dueFrom} ms after it was due (a missed wake-up?)`);
      if (version.end) {
        const removal = version.end.op;
        // The claim (Redis TIME) must come before the call that ended the arming returned; the handler may start after it.
        if (run.firedAt > removal.returnedAt) fail(`${name} was claimed at ${run.firedAt} on ${run.instance}, after ${describeOp(removal)} returned`);
        else if (run.at > removal.returnedAt) startedAfterRemovalReturned++;
      }
    }
    if (version.end?.found === true && runs.length > 0) removedWhileRunning++;
    if (!version.end) {
      if (runs.length === 0) fail(`${name} was still pending when the calls stopped and never ran (lost)`);
    } else if (version.end.found === false) {
      if (runs.length === 0) fail(`${name} was gone by ${describeOp(version.end.op)} although nothing removed it, and never ran (lost)`);
    } else if (runs.length === 0) {
      neverRan++;
      if (dueFrom + lateLimitMs < version.end.op.issuedAt) {
        fail(`${name} was due ${version.end.op.issuedAt - dueFrom} ms before ${describeOp(version.end.op)}, and had not run (a missed wake-up?)`);
      }
    }
  }

  const runs = [...runsOf.values()].reduce((sum, list) => sum + list.length, 0);
  return { violations, versions: versions.length, runs, neverRan, removedWhileRunning, startedAfterRemovalReturned, lateness };
}
