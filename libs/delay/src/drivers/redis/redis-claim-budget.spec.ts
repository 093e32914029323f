import { ClaimBudget } from './redis-claim-budget';

describe('ClaimBudget', () => {
  it('never hands out more slots than the limit', () => {
    const budget = new ClaimBudget(5);
    expect(budget.take(3)).toBe(3);
    expect(budget.take(3)).toBe(2);
    expect(budget.take(3)).toBe(0);
    expect(budget.hasRoom).toBe(false);
    budget.give(2);
    expect(budget.take(10)).toBe(2);
  });

  it('gives freed slots to waiting consumers first come first served, each once', () => {
    const budget = new ClaimBudget(2);
    budget.take(2);
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
    budget.take(2);
    budget.give(1);
    expect(woken).toEqual(['a', 'b']);
  });

  it('limits one claim to an even share of the free slots while others wait', () => {
    const budget = new ClaimBudget(8);
    const waiter = (): void => undefined;
    budget.waitForRoom(waiter);
    budget.waitForRoom(() => undefined);
    budget.waitForRoom(() => undefined);
    // 8 free, this claimant and 3 waiting: 2 each.
    expect(budget.take(100)).toBe(2);
    budget.leave(waiter);
  });

  it('a consumer that left the line is not woken', () => {
    const budget = new ClaimBudget(1);
    budget.take(1);
    let woken = false;
    const wake = (): void => void (woken = true);
    budget.waitForRoom(wake);
    budget.leave(wake);
    budget.give(1);
    expect(woken).toBe(false);
  });
});
