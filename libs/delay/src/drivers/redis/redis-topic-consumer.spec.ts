import { firstLeaseMs } from './redis-topic-consumer';

describe('firstLeaseMs', () => {
  it('is the lease, or 2 x the command timeout + 1 s when that is longer: a lost claim reply is asked again in time', () => {
    expect(firstLeaseMs(30_000, 5_000)).toBe(30_000);
    expect(firstLeaseMs(5_000, 5_000)).toBe(11_000);
    expect(firstLeaseMs(1_000, 100)).toBe(1_200);
  });
});
