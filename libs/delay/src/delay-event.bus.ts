import { Injectable } from '@nestjs/common';
import { Observable, Subject } from 'rxjs';
import { DelayEvent } from './interfaces/delay-event.interface';
import { DelayClock } from './time/clock';

/**
 * The stream behind DelayService.events$. Events are built only while
 * someone listens: callers test `listening` before building one, so a busy
 * app without listeners allocates nothing for them.
 */
@Injectable()
export class DelayEventBus {
  private readonly subject = new Subject<DelayEvent>();
  readonly events$: Observable<DelayEvent> = this.subject.asObservable();

  constructor(private readonly clock: DelayClock) {}

  /** True while events$ has a subscriber. */
  get listening(): boolean {
    return this.subject.observed;
  }

  /** When an event happens, on the library's clock. */
  now(): Date {
    return new Date(this.clock.now());
  }

  /** Sends an event built by the caller (after checking `listening`), `at` included. */
  publish(event: DelayEvent): void {
    this.subject.next(event);
  }

  /** `build` runs only when there is a subscriber. For paths less hot than schedule and cancel. */
  emit(build: () => Omit<DelayEvent, 'at'>): void {
    if (!this.subject.observed) return;
    const event = build() as { -readonly [K in keyof DelayEvent]?: DelayEvent[K] };
    event.at = new Date(this.clock.now());
    this.subject.next(event as DelayEvent);
  }

  complete(): void {
    this.subject.complete();
  }
}
