import { ClaimBudget } from './redis-claim-budget';

describe('ClaimBudget', () => {
  const nobody = (): void => undefined;

  it('never hands out more slots than the limit', () => {
    const budget = new ClaimBudget(5);
    expect(budget.take(3, nobody)).toBe(3);
    expect(budget.take(3, nobody)).toBe(2);
    expect(budget.take(3, nobody)).toBe(0);
    expect(budget.hasRoom).toBe(false);
    budget.give(2);
    expect(budget.take(10, nobody)).toBe(2);
  });

  it('gives freed slots to waiting consumers first come first served, each once', () => {
    const budget = new ClaimBudget(2);
    budget.take(2, nobody);
    const woken: string[] = [];
    const a = (): void => void woken.push('a');
    const b = (): void => void woken.push('b');
    budget.waitForRoom(a);
    budget.waitForRoom(b);
    budget.waitForRoom(a);
    budget.give(1);
    expect(woken).toEqual(['a']);
    budget.give(1);
    expect(woken).toEqual(['a', 'b']);
  });

  it('limits one claim to an even share of the free slots while others wait or were woken and have not claimed yet', () => {
    const budget = new ClaimBudget(8);
    budget.take(8, nobody);
    const members = [0, 1, 2, 3].map(() => (): void => undefined);
    for (const member of members) budget.waitForRoom(member);
    // Handlers finishing together free every slot at once: every waiting shard is woken...
    budget.give(8);
    // ...and the first to claim takes only its share, not all eight.
    expect(members.map((member) => budget.take(100, member))).toEqual([2, 2, 2, 2]);
  });

  it('counts slots occupied by a claim asked again, and a consumer that left the line is not woken', () => {
    const budget = new ClaimBudget(2);
    budget.take(1, nobody);
    budget.occupy(2);
    expect(budget.hasRoom).toBe(false);
    let woken = false;
    const wake = (): void => void (woken = true);
    budget.waitForRoom(wake);
    budget.leave(wake);
    budget.give(1);
    expect(woken).toBe(false);
    expect(budget.hasRoom).toBe(false);
    budget.give(1);
    expect(budget.hasRoom).toBe(true);
  });
});
