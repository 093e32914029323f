import { DriverUnavailableError } from '../errors/driver-unavailable.error';
import { untilDeadline } from './until-deadline';

describe('untilDeadline', () => {
  it('asks again, after waiting for the connection, while the store is unreachable; returns the first answer', async () => {
    let asks = 0;
    const waits: number[] = [];
    const answer = await untilDeadline(
      Date.now() + 10_000,
      () => (++asks < 3 ? Promise.reject(new DriverUnavailableError('connection closed')) : Promise.resolve('taken')),
      (leftMs) => {
        waits.push(leftMs);
        return Promise.resolve();
      },
    );
    expect({ answer, asks, waited: waits.length }).toEqual({ answer: 'taken', asks: 3, waited: 2 });
    expect(Math.min(...waits)).toBeGreaterThan(0);
  });

  it('throws any other error at once, without asking again', async () => {
    let asks = 0;
    const refused = new Error('ERR unknown script');
    await expect(untilDeadline(Date.now() + 10_000, () => (asks++, Promise.reject(refused)), () => Promise.resolve())).rejects.toBe(refused);
    expect(asks).toBe(1);
  });

  it('throws the last DriverUnavailableError once the deadline has come, and starts no ask after it', async () => {
    const asked: number[] = [];
    const startedAt = Date.now();
    const deadline = startedAt + 300;
    let last: DriverUnavailableError | undefined;
    const failing = untilDeadline(
      deadline,
      () => {
        asked.push(Date.now());
        last = new DriverUnavailableError(`attempt ${asked.length}`);
        return Promise.reject(last);
      },
      () => Promise.resolve(),
    );
    const thrown: unknown = await failing.then(() => undefined, (error: unknown) => error);
    expect(thrown).toBeInstanceOf(DriverUnavailableError);
    expect(thrown).toBe(last);
    // Not before the deadline's last pause; the pause between asks keeps the count small.
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(250);
    expect(asked.length).toBeGreaterThanOrEqual(2);
    expect(asked.length).toBeLessThanOrEqual(7);
    expect(Math.max(...asked)).toBeLessThan(deadline);
  });
});
