import { Inject, Injectable, Scope } from '@nestjs/common';
import { REQUEST } from '@nestjs/core';
import {
  DelayContext,
  DelayModule,
  DelayModuleOptions,
  DuplicateHandlerError,
  InvalidDelayOptionsError,
  InvalidTopicError,
  OnDelayExpired,
  ScopedHandlerError,
  VirtualClock,
} from 'nestjs-delay';
import { useApps } from './support/apps';

@Injectable()
class FirstUnpaidHandler {
  @OnDelayExpired('order.unpaid')
  cancel(_context: DelayContext): void {}
}

@Injectable()
class SecondUnpaidHandler {
  @OnDelayExpired('order.unpaid')
  alsoCancel(_context: DelayContext): void {}
}

@Injectable({ scope: Scope.REQUEST })
class RequestScopedHandler {
  @OnDelayExpired('per.request')
  handle(_context: DelayContext): void {}
}

@Injectable({ scope: Scope.TRANSIENT })
class TransientHandler {
  @OnDelayExpired('per.injection')
  handle(_context: DelayContext): void {}
}

/** Singleton by declaration, request-scoped through what it injects. */
@Injectable()
class ImplicitlyScopedHandler {
  constructor(@Inject(REQUEST) readonly request: unknown) {}

  @OnDelayExpired('implicit.scope')
  handle(_context: DelayContext): void {}
}

describe('bootstrap checks (wheel driver)', () => {
  const apps = useApps();
  const clock = new VirtualClock();

  it('fails with DuplicateHandlerError naming both classes when two handlers claim one topic', async () => {
    const app = await apps.create({ imports: [DelayModule.forRoot({ clock })], providers: [FirstUnpaidHandler, SecondUnpaidHandler] });
    const init = app.init();
    await expect(init).rejects.toBeInstanceOf(DuplicateHandlerError);
    await expect(init).rejects.toMatchObject({
      code: 'ERR_DELAY_DUPLICATE_HANDLER',
      topic: 'order.unpaid',
      first: 'FirstUnpaidHandler.cancel',
      second: 'SecondUnpaidHandler.alsoCancel',
      message: expect.stringMatching(/FirstUnpaidHandler\.cancel.*SecondUnpaidHandler\.alsoCancel/),
    });
  });

  it('fails with DuplicateHandlerError for two methods of one class on one topic', async () => {
    @Injectable()
    class Twice {
      @OnDelayExpired('twice')
      a(): void {}
      @OnDelayExpired('twice')
      b(): void {}
    }
    const app = await apps.create({ imports: [DelayModule.forRoot({ clock })], providers: [Twice] });
    await expect(app.init()).rejects.toMatchObject({ code: 'ERR_DELAY_DUPLICATE_HANDLER', first: 'Twice.a', second: 'Twice.b' });
  });

  it.each([
    ['request-scoped', 'RequestScopedHandler.handle', RequestScopedHandler],
    ['transient', 'TransientHandler.handle', TransientHandler],
    ['request-scoped', 'ImplicitlyScopedHandler.handle', ImplicitlyScopedHandler],
  ])('fails with ScopedHandlerError for a handler on a %s provider (%s)', async (scope, name, provider) => {
    const app = await apps.create({ imports: [DelayModule.forRoot({ clock })], providers: [provider] });
    const init = app.init();
    await expect(init).rejects.toBeInstanceOf(ScopedHandlerError);
    await expect(init).rejects.toMatchObject({ code: 'ERR_DELAY_SCOPED_HANDLER', handler: name, scope });
  });

  it('fails with InvalidDelayOptionsError listing every bad forRoot option', async () => {
    const options = { clock, maxPayloadBytes: 0, maxPast: 'whenever', defaults: { concurrency: -1 } } as unknown as DelayModuleOptions;
    const compiled = apps.create({ imports: [DelayModule.forRoot(options)] });
    await expect(compiled).rejects.toBeInstanceOf(InvalidDelayOptionsError);
    await expect(compiled).rejects.toMatchObject({
      code: 'ERR_DELAY_INVALID_OPTIONS',
      problems: expect.arrayContaining([expect.stringContaining('defaults.concurrency'), expect.stringContaining('maxPayloadBytes'), expect.stringContaining('maxPast')]),
    });
    await expect(compiled).rejects.toHaveProperty('problems.length', 3);
  });

  it('fails with InvalidDelayOptionsError naming the handler whose @OnDelayExpired options are bad', async () => {
    @Injectable()
    class BadOptions {
      @OnDelayExpired('bad.options', { attempts: 0, backoff: 'eventually' })
      run(): void {}
    }
    const app = await apps.create({ imports: [DelayModule.forRoot({ clock })], providers: [BadOptions] });
    await expect(app.init()).rejects.toMatchObject({
      code: 'ERR_DELAY_INVALID_OPTIONS',
      where: expect.stringContaining('BadOptions.run'),
      problems: [expect.stringContaining('attempts'), expect.stringContaining('backoff')],
    });
  });

  it('fails with InvalidTopicError for a handler on a malformed topic', async () => {
    @Injectable()
    class BadTopic {
      @OnDelayExpired('order unpaid!')
      run(): void {}
    }
    const app = await apps.create({ imports: [DelayModule.forRoot({ clock })], providers: [BadTopic] });
    await expect(app.init()).rejects.toBeInstanceOf(InvalidTopicError);
  });

  it('boots with valid handlers (the checks above fail for their stated reason only)', async () => {
    const app = await apps.boot({ imports: [DelayModule.forRoot({ clock })], providers: [FirstUnpaidHandler] });
    expect(app.get(FirstUnpaidHandler)).toBeInstanceOf(FirstUnpaidHandler);
  });
});
