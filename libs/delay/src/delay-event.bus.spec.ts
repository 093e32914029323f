import { DelayEventBus } from './delay-event.bus';
import { DelayEvent } from './interfaces/delay-event.interface';
import { SystemClock } from './time/clock';
import { VirtualClock } from './time/virtual-clock';

describe('DelayEventBus', () => {
  const event = (key: string): DelayEvent => ({ type: 'cancelled', topic: 't', key, at: new Date(0) });

  it('listens only while someone subscribes, and sends each event to every subscriber', () => {
    const bus = new DelayEventBus(new VirtualClock());
    expect(bus.listening).toBe(false);
    const first: string[] = [];
    const second: string[] = [];
    const a = bus.events$.subscribe((e) => first.push(e.key));
    const b = bus.events$.subscribe((e) => second.push(e.key));
    expect(bus.listening).toBe(true);
    bus.publish(event('k1'));
    a.unsubscribe();
    bus.publish(event('k2'));
    b.unsubscribe();
    expect(bus.listening).toBe(false);
    bus.publish(event('k3'));
    expect(first).toEqual(['k1']);
    expect(second).toEqual(['k1', 'k2']);
  });

  it('builds an event with emit only when someone listens, stamping it with the clock', () => {
    const clock = new VirtualClock();
    const bus = new DelayEventBus(clock);
    const build = jest.fn(() => ({ type: 'redriven' as const, topic: 't', key: 'k' }));
    bus.emit(build);
    expect(build).not.toHaveBeenCalled();
    const seen: DelayEvent[] = [];
    bus.events$.subscribe((e) => seen.push(e));
    bus.emit(build);
    expect(seen).toEqual([{ type: 'redriven', topic: 't', key: 'k', at: new Date(clock.now()) }]);
  });

  it('a subscriber that unsubscribes another during a publish: that one gets nothing more, and no one else is skipped', () => {
    const bus = new DelayEventBus(new VirtualClock());
    const seen: string[] = [];
    const later = { unsubscribe: (): void => undefined };
    bus.events$.subscribe(() => {
      seen.push('first');
      later.unsubscribe();
    });
    const second = bus.events$.subscribe(() => seen.push('second'));
    bus.events$.subscribe(() => seen.push('third'));
    later.unsubscribe = () => second.unsubscribe();
    bus.publish(event('k'));
    bus.publish(event('k'));
    expect(seen).toEqual(['first', 'third', 'first', 'third']);
  });

  it('stamps events with the time of its clock, the system clock included', () => {
    const virtual = new VirtualClock();
    expect(new DelayEventBus(virtual).now().getTime()).toBe(virtual.now());
    const before = Date.now();
    const stamped = new DelayEventBus(new SystemClock()).now().getTime();
    expect(stamped).toBeGreaterThanOrEqual(before);
    expect(stamped).toBeLessThanOrEqual(Date.now());
    // A subclass that moves time is read through its own now().
    class ShiftedClock extends SystemClock {
      override now(): number {
        return 1_000;
      }
    }
    expect(new DelayEventBus(new ShiftedClock()).now().getTime()).toBe(1_000);
  });

  it('completes every subscriber at shutdown, and completes a late one at once', () => {
    const bus = new DelayEventBus(new VirtualClock());
    let completed = 0;
    bus.events$.subscribe({ complete: () => completed++ });
    bus.complete();
    expect(completed).toBe(1);
    expect(bus.listening).toBe(false);
    bus.events$.subscribe({ complete: () => completed++ });
    expect(completed).toBe(2);
    expect(bus.listening).toBe(false);
  });
});
