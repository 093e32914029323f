/**
 * The jitter of a series: FNV-1a (32 bits) of topic, NUL and key, scaled to
 * [0, jitterMs). The same on every instance and every run, so a schedule's
 * occurrences keep their spacing and a fleet of schedules set for the same
 * minute spreads out evenly.
 */
export function seriesJitterMs(topic: string, key: string, jitterMs: number): number {
  if (jitterMs <= 0) return 0;
  let hash = 0x811c9dc5;
  const text = `${topic}\u0000${key}`;
  for (let n = 0; n < text.length; n++) hash = Math.imul(hash ^ text.charCodeAt(n), 0x01000193);
  return Math.floor(((hash >>> 0) / 0x1_0000_0000) * jitterMs);
}
