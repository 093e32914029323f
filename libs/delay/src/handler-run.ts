import { HandlerAbortedError } from './errors/handler-aborted.error';
import { Delivery } from './interfaces/delay-driver.interface';

/** How a run ended, before it is turned into an outcome. */
export type RunResult = { readonly ok: true } | { readonly ok: false; readonly error: string; readonly cause: 'error' | 'timeout' | 'shutdown' };

/**
 * One handler run while the dispatcher waits for it: its deadline, its
 * place in the tracker's list, and its AbortSignal. The AbortController is
 * made only when the handler reads `signal`, so runs that never look at it
 * (most of them) do not pay for one.
 */
export class HandlerRun {
  /** Links in the tracker's list of runs with the same timeout. */
  prev: HandlerRun | null = null;
  next: HandlerRun | null = null;
  /** The dispatcher still waits for it; false once it settled, timed out or was aborted. */
  live = true;
  /** When it was given up (performance.now()), if it was. */
  abandonedAt: number | undefined;
  private controller: AbortController | undefined;
  private reason: HandlerAbortedError | undefined;

  constructor(
    /** `ClassName.method` of the handler, for messages. */
    readonly handlerName: string,
    readonly delivery: Delivery,
    /** Undefined for no timeout. */
    readonly timeoutMs: number | undefined,
    /** performance.now() by which it must settle; Infinity without a timeout. */
    readonly deadline: number,
    /** Ends the dispatcher's wait. */
    readonly resolve: (result: RunResult) => void,
  ) {}

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
