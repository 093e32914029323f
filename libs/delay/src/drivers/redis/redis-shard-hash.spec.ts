import { shardOf } from './redis-shard-hash';
import { shardTag, topicKeys, topicOfTag } from './redis-keys';

describe('shardOf', () => {
  it('is FNV-1a of the UTF-8 bytes modulo the count (fixed forever: every instance must agree)', () => {
    // FNV-1a 32 of "a" is 0xe40c292c and of "foobar" 0xbf9cf968 (the published test values).
    expect(shardOf('a', 2 ** 31)).toBe(0xe40c292c % 2 ** 31);
    expect(shardOf('foobar', 2 ** 31)).toBe(0xbf9cf968 % 2 ** 31);
    expect(shardOf('order:42', 8)).toBe(0x491db2f1 % 8);
    expect(shardOf('ü😀', 8)).toBe(0x0b24d693 % 8);
    expect(shardOf('', 8)).toBe(0x811c9dc5 % 8);
  });

  it('puts every key in shard 0 of 1, and spreads many keys over every shard', () => {
    expect(shardOf('anything', 1)).toBe(0);
    const counts = new Array<number>(8).fill(0);
    for (let n = 0; n < 8_000; n++) counts[shardOf(`order:${n}`, 8)]++;
    for (const count of counts) expect(count).toBeGreaterThan(800);
  });
});

describe('shard keys', () => {
  it('keeps the one-shard layout on the keys a topic always had, and gives each shard its own hash tag', () => {
    expect(topicKeys('delay', 'order.unpaid').due).toBe('delay:{order.unpaid}:due');
    expect(topicKeys('delay', 'order.unpaid', 3, 8).due).toBe('delay:{order.unpaid#3/8}:due');
    expect(shardTag('order.unpaid', 3, 8)).toBe('order.unpaid#3/8');
    expect(topicOfTag('order.unpaid#3/8')).toBe('order.unpaid');
    expect(topicOfTag('order.unpaid')).toBe('order.unpaid');
  });
});
