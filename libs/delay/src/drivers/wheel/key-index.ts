import { ActionArena } from './action-arena';

/** An empty slot of the table. */
const EMPTY = -1;
/** Slots of a new table: a power of two, as the probe wraps with a mask. */
const INITIAL_SLOTS = 1024;
/** Grow when the table is this full: linear probing stays short below it. */
const MAX_LOAD = 0.75;

/**
 * A topic's key → arena index map: an open-addressing hash table (linear
 * probing) of arena indices in one Int32Array. The key strings stay in the
 * arena, which also keeps each key's hash, so the table costs 4 bytes a slot:
 * 5 to 11 bytes per key. A Map costs 28 to 56 bytes per entry, and holds at
 * most 2^24 entries (it throws past that); this holds as many keys as memory
 * allows (2^30 slots, far beyond a process's heap).
 */
export class KeyIndex {
  private table = new Int32Array(INITIAL_SLOTS).fill(EMPTY);
  private mask = INITIAL_SLOTS - 1;
  private count = 0;
  private growAt = INITIAL_SLOTS * MAX_LOAD;

  constructor(private readonly arena: ActionArena) {}

  get size(): number {
    return this.count;
  }

  /** The arena index filed under `key`, or undefined. */
  get(key: string): number | undefined {
    const slot = this.find(key, hashKey(key));
    return slot < 0 ? undefined : this.table[slot];
  }

  /** Files arena index `i` (whose key is `key`) under `key`, replacing what was filed there. */
  set(key: string, i: number): void {
    const hash = hashKey(key);
    this.arena.hash[i] = hash;
    const found = this.find(key, hash);
    if (found >= 0) {
      this.table[found] = i;
      return;
    }
    if (this.count >= this.growAt) this.grow();
    const { table, mask } = this;
    let slot = hash & mask;
    while (table[slot] !== EMPTY) slot = (slot + 1) & mask;
    table[slot] = i;
    this.count++;
  }

  /** Removes `key`; true if it was there. */
  delete(key: string): boolean {
    let hole = this.find(key, hashKey(key));
    if (hole < 0) return false;
    // Backward-shift deletion: later entries of the probe run move up into
    // the hole, so no tombstones pile up under schedule/cancel churn.
    const { table, mask } = this;
    const hashes = this.arena.hash;
    let slot = hole;
    for (;;) {
      slot = (slot + 1) & mask;
      const i = table[slot];
      if (i === EMPTY) break;
      const home = hashes[i] & mask;
      // Move i into the hole unless its home lies cyclically in (hole, slot].
      if (hole <= slot ? home <= hole || home > slot : home <= hole && home > slot) {
        table[hole] = i;
        hole = slot;
      }
    }
    table[hole] = EMPTY;
    this.count--;
    return true;
  }

  /** Every arena index filed, in table order. */
  values(): number[] {
    const values: number[] = [];
    for (const i of this.table) if (i !== EMPTY) values.push(i);
    return values;
  }

  private find(key: string, hash: number): number {
    const { table, mask } = this;
    const { hash: hashes, keys } = this.arena;
    let slot = hash & mask;
    for (;;) {
      const i = table[slot];
      if (i === EMPTY) return -1;
      if (hashes[i] === hash && keys[i] === key) return slot;
      slot = (slot + 1) & mask;
    }
  }

  private grow(): void {
    const old = this.table;
    const size = old.length * 2;
    const table = new Int32Array(size).fill(EMPTY);
    const mask = size - 1;
    const hashes = this.arena.hash;
    for (const i of old) {
      if (i === EMPTY) continue;
      let slot = hashes[i] & mask;
      while (table[slot] !== EMPTY) slot = (slot + 1) & mask;
      table[slot] = i;
    }
    this.table = table;
    this.mask = mask;
    this.growAt = size * MAX_LOAD;
  }
}

/**
 * FNV-1a over the key's UTF-16 units, with a final avalanche so that keys
 * differing only in their last characters (order:1, order:2, ...) spread
 * over the low bits the table uses.
 */
export function hashKey(key: string): number {
  let h = 0x811c9dc5;
  for (let n = 0; n < key.length; n++) h = Math.imul(h ^ key.charCodeAt(n), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  return h | 0;
}
