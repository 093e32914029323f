import { Injectable } from '@nestjs/common';
import { Observable, Subscriber } from 'rxjs';
import { DelayEvent } from './interfaces/delay-event.interface';
import { DelayClock, SystemClock } from './time/clock';

/**
 * The stream behind DelayService.events$: hot and multicast, like a Subject,
 * completed at shutdown. Events are built only while someone listens: callers
 * test `listening` before building one, so a busy app without listeners
 * allocates nothing for them. It keeps its own list of subscribers rather
 * than a Subject because Subject.next wraps every call in a closure and
 * copies its observer list, which cost as much as building the event.
 */
@Injectable()
export class DelayEventBus {
  /** Replaced, never mutated, so a publish already iterating is not disturbed by a subscribe or unsubscribe. */
  private subscribers: ReadonlyArray<Subscriber<DelayEvent>> = [];
  private completed = false;

  readonly events$: Observable<DelayEvent> = new Observable<DelayEvent>((subscriber) => {
    if (this.completed) {
      subscriber.complete();
      return undefined;
    }
    this.subscribers = [...this.subscribers, subscriber];
    return () => {
      this.subscribers = this.subscribers.filter((other) => other !== subscriber);
    };
  });

  /** The clock is the stock system clock: `new Date()` reads the same time in one step, not two. */
  private readonly systemTime: boolean;

  constructor(private readonly clock: DelayClock) {
    this.systemTime = clock.now === SystemClock.prototype.now;
  }

  /** True while events$ has a subscriber. */
  get listening(): boolean {
    return this.subscribers.length > 0;
  }

  /** When an event happens, on the library's clock. */
  now(): Date {
    // Reading the clock costs as much as building an event on some virtual machines: one read, not two.
    return this.systemTime ? new Date() : new Date(this.clock.now());
  }

  /** Sends an event built by the caller (after checking `listening`), `at` included. A throwing listener is reported by rxjs, never thrown here. */
  publish(event: DelayEvent): void {
    const subscribers = this.subscribers;
    for (let n = 0; n < subscribers.length; n++) subscribers[n].next(event);
  }

  /** `build` runs only when there is a subscriber. For paths less hot than schedule and cancel. */
  emit(build: () => Omit<DelayEvent, 'at'>): void {
    if (this.subscribers.length === 0) return;
    const event = build() as { -readonly [K in keyof DelayEvent]?: DelayEvent[K] };
    event.at = this.now();
    this.publish(event as DelayEvent);
  }

  complete(): void {
    this.completed = true;
    const subscribers = this.subscribers;
    this.subscribers = [];
    for (const subscriber of subscribers) subscriber.complete();
  }
}
