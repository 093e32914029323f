import { InvalidCronExpressionError } from '../errors/invalid-cron-expression.error';
import { CronExpression } from './cron-expression';

describe('CronExpression', () => {
  it.each([
    ['30 2 * * *', true],
    ['0 9,17 * * MON-FRI', true],
    ['0 1-3 * * *', true],
    ['15 30 2 * * *', true],
    ['@daily', true],
    ['@yearly', true],
    ['0 * * * *', false],
    ['@hourly', false],
    ['*/15 * * * *', false],
    ['0 0-6/2 * * *', false],
    ['* 30 2 * * *', false],
    ['0 ? * * *', false],
  ])('%s is fixed-time: %s', (expression, fixedTime) => {
    expect(CronExpression.parse(expression).fixedTime).toBe(fixedTime);
  });

  it('matches on wall milliseconds, strictly after, in whole seconds', () => {
    const expression = CronExpression.parse('30 2 * * *');
    expect(expression.nextWall(Date.UTC(2026, 2, 29, 2, 30))).toBe(Date.UTC(2026, 2, 30, 2, 30));
    expect(expression.nextWall(Date.UTC(2026, 2, 29, 2, 29, 59, 999))).toBe(Date.UTC(2026, 2, 29, 2, 30));
  });

  it('gives the smallest wall-clock spacing of its times of day, the wrap to the next day included', () => {
    expect(CronExpression.parse('*/10 * * * * *').minWallSpacingMs()).toBe(10_000);
    expect(CronExpression.parse('0,59 30 2 * * *').minWallSpacingMs()).toBe(59_000);
    expect(CronExpression.parse('0 23,1 * * *').minWallSpacingMs()).toBe(2 * 3_600_000);
    expect(CronExpression.parse('30 2 * * *').minWallSpacingMs()).toBe(86_400_000);
  });

  it('refuses a year field, which is not part of the spec', () => {
    expect(() => CronExpression.parse('0 0 0 1 1 * 2030')).toThrow(InvalidCronExpressionError);
  });
});
