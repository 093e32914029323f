const resolved = Promise.resolve();

/**
 * Runs `callback` in a microtask: later than the caller, before any I/O.
 * Not `queueMicrotask`, which Node wraps in an AsyncResource each time: two
 * to three times the cost of a reaction on a settled promise, paid on every
 * run of a synchronous handler. `callback` must not throw.
 */
export function inMicrotask(callback: () => void): void {
  void resolved.then(callback);
}
