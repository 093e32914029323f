import { INestApplication, ModuleMetadata } from '@nestjs/common';
import { Test, TestingModuleBuilder } from '@nestjs/testing';

export interface AppFactory {
  /** Compiles the module and creates the app, without init (for tests that expect bootstrap to fail). */
  create(metadata: ModuleMetadata, customize?: (builder: TestingModuleBuilder) => TestingModuleBuilder): Promise<INestApplication>;
  /** Compiles, creates and initialises a real Nest application (hooks run, handlers discovered, driver started). */
  boot(metadata: ModuleMetadata, customize?: (builder: TestingModuleBuilder) => TestingModuleBuilder): Promise<INestApplication>;
}

/**
 * Call once at the top of a describe block: every app created through the
 * returned factory is closed after each test, so timers and handlers never
 * outlive the test that started them.
 */
export function useApps(): AppFactory {
  const open: INestApplication[] = [];
  afterEach(async () => {
    for (const app of open.splice(0).reverse()) await app.close();
  });
  const create: AppFactory['create'] = async (metadata, customize) => {
    const builder = Test.createTestingModule(metadata);
    const moduleRef = await (customize ? customize(builder) : builder).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    open.push(app);
    return app;
  };
  return {
    create,
    async boot(metadata, customize) {
      const app = await create(metadata, customize);
      await app.init();
      return app;
    },
  };
}

/** Resolves after the current macrotask queue has run (lets queued dispatch happen). */
export const macrotask = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
