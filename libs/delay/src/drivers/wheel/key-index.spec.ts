import { ActionArena } from './action-arena';
import { KeyIndex } from './key-index';

describe('KeyIndex', () => {
  /** Allocates an arena slot for `key` as the wheel driver does before filing it. */
  const file = (arena: ActionArena, index: KeyIndex, key: string): number => {
    const i = arena.alloc(0, key, undefined, 0);
    index.set(key, i);
    return i;
  };

  it('agrees with a Map through growth and heavy churn of set, replace and delete', () => {
    const arena = new ActionArena();
    const index = new KeyIndex(arena);
    const reference = new Map<string, number>();
    let seed = 12_345;
    const random = (n: number): number => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return seed % n;
    };
    // Deletes that answered otherwise than the Map, checked once at the end (an expect per step made this case take 15 s).
    const wrongDeletes: string[] = [];
    for (let step = 0; step < 200_000; step++) {
      const key = `order:${random(20_000)}`;
      const op = random(3);
      if (op < 2) {
        const held = reference.get(key);
        if (held !== undefined) arena.free(held);
        reference.set(key, file(arena, index, key));
      } else {
        const held = reference.get(key);
        if (index.delete(key) !== (held !== undefined)) wrongDeletes.push(`step ${step}: delete(${key})`);
        if (held !== undefined) {
          reference.delete(key);
          arena.free(held);
        }
      }
    }
    expect(wrongDeletes).toEqual([]);
    expect(index.size).toBe(reference.size);
    const misfiled = [...reference].filter(([key, i]) => index.get(key) !== i).map(([key]) => key);
    expect(misfiled).toEqual([]);
    expect(index.get('order:absent')).toBeUndefined();
    expect(index.values().sort((a, b) => a - b)).toEqual([...reference.values()].sort((a, b) => a - b));
  });

  it('grows through several tables and still finds every key', () => {
    const arena = new ActionArena();
    const index = new KeyIndex(arena);
    for (let n = 0; n < 100_000; n++) file(arena, index, `k${n}`);
    expect(index.size).toBe(100_000);
    for (let n = 0; n < 100_000; n += 997) expect(arena.keys[index.get(`k${n}`) as number]).toBe(`k${n}`);
  });

  it('replacing a key files the new slot and keeps the count', () => {
    const arena = new ActionArena();
    const index = new KeyIndex(arena);
    file(arena, index, 'a');
    const second = file(arena, index, 'a');
    expect(index.size).toBe(1);
    expect(index.get('a')).toBe(second);
    expect(index.delete('a')).toBe(true);
    expect(index.delete('a')).toBe(false);
    expect(index.size).toBe(0);
  });
});
