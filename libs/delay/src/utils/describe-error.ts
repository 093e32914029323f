/** A one-line description of anything thrown; never throws itself (cycles, BigInt, odd objects). */
export function describeError(thrown: unknown): string {
  if (thrown instanceof Error) return thrown.message || thrown.name;
  if (typeof thrown === 'string') return thrown;
  try {
    return JSON.stringify(thrown) ?? String(thrown);
  } catch {
    return Object.prototype.toString.call(thrown);
  }
}
