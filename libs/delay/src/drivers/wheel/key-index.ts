import { ActionArena } from './action-arena';

/** An empty slot of the table. */
const EMPTY = -1;
/** Slots of a new table: a power of two, as the probe wraps with a mask. */
const INITIAL_SLOTS = 1024;
/** Grow when the table is this full: linear probing stays short below it. */
const MAX_LOAD = 0.75;

/**
 * A topic's key → arena index map: an open-addressing hash table (linear
 * probing) in one Int32Array, each slot a pair (arena index, key hash). The
 * key strings stay in the arena. Keeping the hash in the slot, next to the
 * index, lets a probe skip other keys without reading the arena (a cache
 * miss each at a million keys), and lets the table grow and delete by
 * reading only itself. It costs 8 bytes a slot: 11 to 21 bytes per key,
 * against 28 to 56 for a Map entry; and a Map holds at most 2^24 entries (it
 * throws past that), this as many keys as memory allows.
 */
export class KeyIndex {
  /** Pairs: table[2s] is slot s's arena index (or EMPTY), table[2s + 1] its key's hash. */
  private table = emptyTable(INITIAL_SLOTS);
  private mask = INITIAL_SLOTS - 1;
  private count = 0;
  private growAt = INITIAL_SLOTS * MAX_LOAD;
  /**
   * The last key hashed and its hash: the driver looks a key up and then
   * files or removes the same key, which would otherwise hash it twice.
   */
  private lastKey = '';
  private lastHash = hashKey('');

  constructor(private readonly arena: ActionArena) {}

  get size(): number {
    return this.count;
  }

  /** The arena index filed under `key`, or undefined. */
  get(key: string): number | undefined {
    const slot = this.find(key, this.hashOf(key));
    return slot < 0 ? undefined : this.table[slot << 1];
  }

  /** Files arena index `i` (whose key is `key`) under `key`, replacing what was filed there. */
  set(key: string, i: number): void {
    const hash = this.hashOf(key);
    const found = this.find(key, hash);
    if (found >= 0) {
      this.table[found << 1] = i;
      return;
    }
    if (this.count >= this.growAt) this.grow();
    const { table, mask } = this;
    let slot = hash & mask;
    while (table[slot << 1] !== EMPTY) slot = (slot + 1) & mask;
    table[slot << 1] = i;
    table[(slot << 1) + 1] = hash;
    this.count++;
  }

  /** Removes `key`; true if it was there. */
  delete(key: string): boolean {
    return this.take(key) !== undefined;
  }

  /** Removes `key` and returns the arena index it was filed under, or undefined: a lookup and a delete in one probe. */
  take(key: string): number | undefined {
    let hole = this.find(key, this.hashOf(key));
    if (hole < 0) return undefined;
    const { table, mask } = this;
    const taken = table[hole << 1];
    // Backward-shift deletion: later entries of the probe run move up into
    // the hole, so no tombstones pile up under schedule/cancel churn.
    let slot = hole;
    for (;;) {
      slot = (slot + 1) & mask;
      const i = table[slot << 1];
      if (i === EMPTY) break;
      const hash = table[(slot << 1) + 1];
      const home = hash & mask;
      // Move the entry into the hole unless its home lies cyclically in (hole, slot].
      if (hole <= slot ? home <= hole || home > slot : home <= hole && home > slot) {
        table[hole << 1] = i;
        table[(hole << 1) + 1] = hash;
        hole = slot;
      }
    }
    table[hole << 1] = EMPTY;
    this.count--;
    return taken;
  }

  /** Every arena index filed, in table order. */
  values(): number[] {
    const values: number[] = [];
    const { table } = this;
    for (let n = 0; n < table.length; n += 2) if (table[n] !== EMPTY) values.push(table[n]);
    return values;
  }

  private hashOf(key: string): number {
    if (key === this.lastKey) return this.lastHash;
    const hash = hashKey(key);
    this.lastKey = key;
    this.lastHash = hash;
    return hash;
  }

  /** The slot holding `key`, or -1. */
  private find(key: string, hash: number): number {
    const { table, mask } = this;
    const { keys } = this.arena;
    let slot = hash & mask;
    for (;;) {
      const i = table[slot << 1];
      if (i === EMPTY) return -1;
      if (table[(slot << 1) + 1] === hash && keys[i] === key) return slot;
      slot = (slot + 1) & mask;
    }
  }

  private grow(): void {
    const old = this.table;
    const slots = old.length; // twice the old slot count
    const table = emptyTable(slots);
    const mask = slots - 1;
    for (let n = 0; n < old.length; n += 2) {
      const i = old[n];
      if (i === EMPTY) continue;
      const hash = old[n + 1];
      let slot = hash & mask;
      while (table[slot << 1] !== EMPTY) slot = (slot + 1) & mask;
      table[slot << 1] = i;
      table[(slot << 1) + 1] = hash;
    }
    this.table = table;
    this.mask = mask;
    this.growAt = slots * MAX_LOAD;
  }
}

function emptyTable(slots: number): Int32Array {
  return new Int32Array(slots * 2).fill(EMPTY);
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
