import { ClaimInFlight, claimsSettled } from './claim-in-flight';

describe('ClaimInFlight', () => {
  it('settles at once with no claim on its way, and when the claim on its way ends', async () => {
    const claim = new ClaimInFlight();
    await expect(claim.settled()).resolves.toBeUndefined();
    claim.begin();
    let settled = false;
    const waiting = claim.settled().then(() => (settled = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    claim.end();
    await waiting;
    expect(settled).toBe(true);
    expect(claim.active).toBe(false);
  });

  it('remembers that shutdown gave up on it', () => {
    const claim = new ClaimInFlight();
    expect(claim.abandoned).toBe(false);
    claim.abandon();
    expect(claim.abandoned).toBe(true);
  });

  it('claimsSettled waits for every claim on its way, but not past the deadline', async () => {
    const [ends, never, idle] = [new ClaimInFlight(), new ClaimInFlight(), new ClaimInFlight()];
    ends.begin();
    setTimeout(() => ends.end(), 20);
    const started = Date.now();
    await claimsSettled([ends, idle], started + 5_000);
    expect(Date.now() - started).toBeLessThan(4_000);
    never.begin();
    const bounded = Date.now();
    await claimsSettled([never, ends], bounded + 100);
    expect(Date.now() - bounded).toBeGreaterThanOrEqual(95);
  });
});
