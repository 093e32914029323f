import { EventEmitter } from 'node:events';
import { DriverUnavailableError } from '../../errors/driver-unavailable.error';
import { RedisSocketWatch } from './redis-socket-watch';

/** A call that settles only when the test says so, as a command whose reply has not come yet. */
function pending<T>(): { promise: Promise<T>; resolve(value: T): void; reject(error: Error): void } {
  let resolve: (value: T) => void = () => undefined;
  let reject: (error: Error) => void = () => undefined;
  const promise = new Promise<T>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  return { promise, resolve, reject };
}

describe('RedisSocketWatch', () => {
  it('fails every call in flight when the socket closes, saying it may have been applied; calls made after carry on', async () => {
    const client = new EventEmitter();
    const watch = new RedisSocketWatch(client);
    const first = watch.track('claim', pending<string>().promise);
    const second = watch.track('schedule', pending<string>().promise);
    client.emit('close');
    await expect(first).rejects.toThrow(DriverUnavailableError);
    await expect(second).rejects.toThrow(/closed before schedule was answered \(it may have been applied\)/);

    const later = pending<string>();
    const tracked = watch.track('complete', later.promise);
    later.resolve('OK');
    await expect(tracked).resolves.toBe('OK');
    // Answered calls are forgotten: a close now fails nothing, and a late reply of a failed call is ignored.
    client.emit('end');
    await expect(tracked).resolves.toBe('OK');
  });

  it('passes the call\'s own result or error through, and a late rejection after the close is not left unhandled', async () => {
    const client = new EventEmitter();
    const watch = new RedisSocketWatch(client);
    const refused = pending<string>();
    const tracked = watch.track('claim', refused.promise);
    refused.reject(new Error('ERR bad script'));
    await expect(tracked).rejects.toThrow('ERR bad script');

    const dropped = pending<string>();
    const lost = watch.track('claim', dropped.promise);
    client.emit('close');
    await expect(lost).rejects.toThrow(DriverUnavailableError);
    dropped.reject(new Error('Connection is closed.'));
    await new Promise((resolve) => setImmediate(resolve));
  });

  it('stop() removes its listeners and leaves the client as it was', () => {
    const client = new EventEmitter();
    const watch = new RedisSocketWatch(client);
    expect(client.listenerCount('close') + client.listenerCount('end')).toBe(2);
    watch.stop();
    expect(client.listenerCount('close') + client.listenerCount('end')).toBe(0);
  });
});
