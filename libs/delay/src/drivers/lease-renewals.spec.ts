import { LeaseRenewals } from './lease-renewals';

describe('LeaseRenewals', () => {
  it('gives runs of recurring topics the shorter recurring lease (5 s by default, never more than lease)', () => {
    expect(new LeaseRenewals(30_000, undefined).leaseFor(true)).toBe(5_000);
    expect(new LeaseRenewals(30_000, undefined).leaseFor(false)).toBe(30_000);
    expect(new LeaseRenewals(2_000, '5s').leaseFor(true)).toBe(2_000);
    expect(new LeaseRenewals(30_000, '10s').leaseFor(true)).toBe(10_000);
  });

  it('ticks for the shorter lease when a topic has it, and renews each topic when its own time has come', () => {
    const leases = new LeaseRenewals(30_000, undefined);
    expect(leases.timerMs(false)).toBe(10_000);
    const timer = leases.timerMs(true);
    expect(timer).toBe(1_000);
    const recurring = {};
    const oneOff = {};
    const renewedAt = (consumer: object, isRecurring: boolean): number[] => {
      const at: number[] = [];
      for (let now = 0; now <= 30_000; now += timer) if (leases.due(consumer, isRecurring, timer, now)) at.push(now);
      return at;
    };
    // A fifth of 5 s: every tick; a third of 30 s: every tenth.
    expect(renewedAt(recurring, true)).toHaveLength(31);
    expect(renewedAt(oneOff, false)).toEqual([0, 10_000, 20_000, 30_000]);
  });

  it('never renews a consumer while its last renewal goes on, and does not hold the others back for it', async () => {
    const leases = new LeaseRenewals(30_000, undefined);
    const stuck = {};
    const healthy = {};
    let answer: () => void = () => undefined;
    expect(leases.due(stuck, true, 1_000, 0)).toBe(true);
    const renewal = leases.track(stuck, () => new Promise<void>((resolve) => (answer = resolve)));
    expect(leases.due(healthy, true, 1_000, 0)).toBe(true);
    for (const now of [1_000, 2_000, 3_000]) {
      expect(leases.due(stuck, true, 1_000, now)).toBe(false);
      expect(leases.due(healthy, true, 1_000, now)).toBe(true);
    }
    answer();
    await renewal;
    expect(leases.due(stuck, true, 1_000, 4_000)).toBe(true);
  });
});
