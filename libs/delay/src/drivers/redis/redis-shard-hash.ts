const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const encoder = new TextEncoder();

/**
 * The shard of a key among `shards`: FNV-1a (32 bits) of the key's UTF-8
 * bytes, modulo the count. It must never change between versions or
 * processes: every instance has to find a key in the same shard.
 */
export function shardOf(key: string, shards: number): number {
  if (shards === 1) return 0;
  let hash = FNV_OFFSET;
  let ascii = true;
  for (let n = 0; n < key.length; n++) {
    const code = key.charCodeAt(n);
    if (code > 0x7f) {
      ascii = false;
      break;
    }
    hash = Math.imul(hash ^ code, FNV_PRIME);
  }
  if (!ascii) {
    hash = FNV_OFFSET;
    for (const byte of encoder.encode(key)) hash = Math.imul(hash ^ byte, FNV_PRIME);
  }
  return (hash >>> 0) % shards;
}
