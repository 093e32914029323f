import { RegisteredHandler } from './delay-handler.registry';
import { HandlerAbortedError } from './errors/handler-aborted.error';
import { Delivery, DeliveryOutcome } from './interfaces/delay-driver.interface';

/** How a run ended, before it is turned into an outcome. */
export type RunResult =
  /** committed: a transactional run's completion committed with it; gone: its arming was gone before it began (nothing ran). */
  | { readonly ok: true; readonly committed?: boolean; readonly gone?: boolean }
  /** commit: a transactional run whose commit did not answer (the action's row decides). */
  | { readonly ok: false; readonly error: string; readonly cause: 'error' | 'timeout' | 'shutdown' | 'commit' };

/**
 * One handler run while the dispatcher waits for it: its deadline, its
 * place in the tracker's list, its AbortSignal, and where its outcome goes.
 * The AbortController is made only when the handler reads `signal`, so runs
 * that never look at it (most of them) do not pay for one.
 */
export class HandlerRun {
  /** Links in the tracker's list of runs with the same timeout. */
  prev: HandlerRun | null = null;
  next: HandlerRun | null = null;
  /** The dispatcher still waits for it; false once it settled, timed out or was aborted. */
  live = true;
  /** When it was given up (performance.now()), if it was. */
  abandonedAt: number | undefined;
  /** Undefined for no timeout. */
  readonly timeoutMs: number | undefined;
  private controller: AbortController | undefined;
  private reason: HandlerAbortedError | undefined;

  constructor(
    readonly handler: RegisteredHandler,
    readonly delivery: Delivery,
    /** performance.now() by which it must settle; Infinity without a timeout (moved by HandlerRunTracker.restart). */
    public deadline: number,
    /** Where the outcome goes: the driver's callback. Called once, by the dispatcher. */
    readonly report: (outcome: DeliveryOutcome) => void,
  ) {
    this.timeoutMs = handler.options.timeoutMs;
  }

  /** `ClassName.method` of the handler, for messages. */
  get handlerName(): string {
    return this.handler.name;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.reason) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  abort(reason: HandlerAbortedError): void {
    this.reason = reason;
    this.controller?.abort(reason);
  }
}
