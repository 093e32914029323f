import { CanActivate, ExecutionContext, ForbiddenException, INestApplication, Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DelayContext, DelayModule, DelayModuleOptions, DelayService, OnDelayExpired, OnRecurring, Recurring } from 'nestjs-delay';
import { DelayAdminModule, DelayAdminOptions } from 'nestjs-delay/admin';
import { AddressInfo } from 'node:net';

export const INVOICE = 'invoice.remind';
export const EXPORT = 'export.run';
/** A schedule declared in code (key 'default'), far from firing during a test. */
export const DIGEST = 'digest.daily';
/** Schedules made per key with upsertRecurring. */
export const REPORTS = 'reports.every';

/**
 * Handlers whose failures the test controls: a key in `failing` throws
 * (with a message that is also markup, to show escaping), and every run is
 * recorded, so a test sees when a redriven action really ran.
 */
@Injectable()
export class ScriptedHandlers {
  readonly failing = new Set<string>();
  readonly runs: Array<{ topic: string; key: string; attempt: number; ok: boolean }> = [];
  /** How long a run of REPORTS takes. */
  reportHoldMs = 0;

  @OnDelayExpired(INVOICE, { attempts: 1 })
  invoice(context: DelayContext): void {
    this.run(context);
  }

  @OnDelayExpired(EXPORT, { attempts: 1 })
  export(context: DelayContext): void {
    this.run(context);
  }

  @Recurring(DIGEST, { cron: '0 3 * * *', timeZone: 'Europe/Paris' })
  digest(context: DelayContext): void {
    this.run(context);
  }

  @OnRecurring(REPORTS)
  async report(context: DelayContext): Promise<void> {
    this.run(context);
    if (this.reportHoldMs > 0) await new Promise((resolve) => setTimeout(resolve, this.reportHoldMs));
  }

  private run({ topic, key, attempt }: DelayContext): void {
    const ok = !this.failing.has(key);
    this.runs.push({ topic, key, attempt, ok });
    if (!ok) throw new Error(`<b>SMTP 550</b> mailbox of ${key} unavailable`);
  }

  ranOk(topic: string, key: string): boolean {
    return this.runs.some((run) => run.topic === topic && run.key === key && run.ok);
  }
}

/** Anyone may read; only a request carrying `x-role: admin` may act. */
@Injectable()
export class RoleGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<{ method: string; headers: Record<string, string | undefined> }>();
    if (request.method === 'GET' || request.method === 'HEAD') return true;
    if (request.headers['x-role'] !== 'admin') throw new ForbiddenException('Only an admin may change delayed actions.');
    return true;
  }
}

export interface AdminTestApp {
  readonly app: INestApplication;
  readonly delay: DelayService;
  readonly handlers: ScriptedHandlers;
  readonly baseUrl: string;
}

/** A small app on the real clock (and the wheel, unless `driver` says otherwise), with the admin page mounted as given, listening on a free port. */
export async function startAdminApp(admin: Partial<DelayAdminOptions> = {}, globalPrefix?: string, driver: DelayModuleOptions['driver'] = { type: 'wheel', tickMs: 5 }): Promise<AdminTestApp> {
  @Module({
    imports: [
      DelayModule.forRoot({ driver }),
      DelayAdminModule.register({ path: 'admin/delays', writable: true, guards: [RoleGuard], ...admin }),
    ],
    providers: [ScriptedHandlers],
  })
  class AdminTestModule {}

  const moduleRef = await Test.createTestingModule({ imports: [AdminTestModule] }).compile();
  // A browser keeps its connections open; closing the app must not wait for it.
  const app = moduleRef.createNestApplication({ logger: false, forceCloseConnections: true });
  if (globalPrefix) app.setGlobalPrefix(globalPrefix);
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  return { app, delay: app.get(DelayService), handlers: app.get(ScriptedHandlers), baseUrl: `http://127.0.0.1:${port}` };
}

/** Polls `check` until it holds; fails with `what` after `timeoutMs`. Generous: a loaded machine is slow, not wrong. */
export async function eventually(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Makes `key` of `topic` dead: its handler fails once, and attempts is 1. */
export async function killAction(target: AdminTestApp, topic: string, key: string, payload: unknown = { to: `${key}@example.com` }): Promise<void> {
  target.handlers.failing.add(key);
  await target.delay.schedule(topic, key, { delay: 0, payload });
  await eventually(`${topic}/${key} is dead`, async () => (await target.delay.listDead(topic)).items.some((dead) => dead.key === key));
}
