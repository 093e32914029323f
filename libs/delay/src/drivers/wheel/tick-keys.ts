import { compareCodePoints } from '../../utils/code-point-order';

/**
 * The keys of a topic's recurring ticks, a set that can also be read in key
 * order (listSeries). The order is an array sorted when first read after a
 * key came or went, and kept while ticks are only re-armed (most of the
 * time): a page is then a binary search and a slice.
 */
export class TickKeys {
  private readonly keys = new Set<string>();
  private sorted: string[] | null = null;

  get size(): number {
    return this.keys.size;
  }

  has(key: string): boolean {
    return this.keys.has(key);
  }

  add(key: string): void {
    if (this.keys.has(key)) return;
    this.keys.add(key);
    this.sorted = null;
  }

  delete(key: string): void {
    if (this.keys.delete(key)) this.sorted = null;
  }

  /** Up to `limit` keys after `after` (from the first when null), in code point order. */
  page(after: string | null, limit: number): string[] {
    const sorted = (this.sorted ??= [...this.keys].sort(compareCodePoints));
    let low = 0;
    if (after !== null) {
      // The first key greater than `after`.
      let high = sorted.length;
      while (low < high) {
        const middle = (low + high) >>> 1;
        if (compareCodePoints(sorted[middle], after) <= 0) low = middle + 1;
        else high = middle;
      }
    }
    return sorted.slice(low, low + limit);
  }
}
