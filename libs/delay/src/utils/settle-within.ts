/**
 * Settles like `promise`, or rejects with `onTimeout()`'s error once `ms`
 * have passed, whichever comes first; a late result is ignored. `mapError`
 * turns the promise's own rejection into the error the caller reports.
 */
export function settleWithin<T>(
  promise: Promise<T>,
  ms: number,
  onTimeout: () => Error,
  mapError: (error: unknown) => Error = (error) => (error instanceof Error ? error : new Error(String(error))),
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(onTimeout()), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(mapError(error));
      },
    );
  });
}
