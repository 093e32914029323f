/** While 'bufferOne' holds an occurrence back, the tick looks again this often (besides the nudge of the instance whose run ends). */
export const BUFFER_RECHECK_MS = 1_000;

/**
 * What overlap 'bufferOne' does with one tick's instants: never two
 * occurrences of a schedule alive at once, and at most one held back until
 * the previous one ends (the earliest: a later one is skipped, as Temporal's
 * BUFFER_ONE keeps the first start it buffered). The held-back instant is
 * kept in the tick's state, not created: the tick creates it once nothing
 * of the schedule is waiting or running.
 */
export interface BufferOnePlan {
  /** Nothing previous alive: the instant created now, the next one held back behind it (if any), and the ones skipped. */
  readonly free: { readonly create: number; readonly buffered: number | undefined; readonly skipped: readonly number[] };
  /** A previous occurrence still alive: nothing is created; this instant is held back and the others are skipped. */
  readonly alive: { readonly buffered: number; readonly skipped: readonly number[] };
}

/** Undefined when there is nothing to decide (no instant held back, none due). */
export function planBufferOne(buffered: number | undefined, fire: readonly number[]): BufferOnePlan | undefined {
  const candidates = buffered === undefined ? [...fire] : [buffered, ...fire.filter((instant) => instant > buffered)];
  if (candidates.length === 0) return undefined;
  const [first, ...rest] = candidates;
  return {
    free: { create: first, buffered: rest.length > 0 ? rest[0] : undefined, skipped: rest.slice(1) },
    alive: { buffered: first, skipped: rest },
  };
}
