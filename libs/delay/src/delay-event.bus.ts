import { Injectable } from '@nestjs/common';
import { Observable, Subject } from 'rxjs';
import { DelayEvent } from './interfaces/delay-event.interface';
import { DelayClock } from './time/clock';

/** The stream behind DelayService.events$. Events are built only while someone listens. */
@Injectable()
export class DelayEventBus {
  private readonly subject = new Subject<DelayEvent>();
  readonly events$: Observable<DelayEvent> = this.subject.asObservable();

  constructor(private readonly clock: DelayClock) {}

  /** `build` runs only when there is a subscriber, so a busy app without listeners pays nothing. */
  emit(build: () => Omit<DelayEvent, 'at'>): void {
    if (this.subject.observed) this.subject.next({ ...build(), at: new Date(this.clock.now()) });
  }

  complete(): void {
    this.subject.complete();
  }
}
