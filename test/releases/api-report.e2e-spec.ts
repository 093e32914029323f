import { spawn } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

// tools/api-report.js run on a copy of the repository's tools, changelog and library package.json, as
// `npm run lint` runs it: the check must fail when a public declaration changes without a changelog entry,
// and pass once the report is updated and [Unreleased] says what changed. The copy's library is a small one
// with the same entry points (the check reads them from package.json "exports"), so that each of the
// dozen compilations below takes a moment rather than the library's full build.

const ROOT = resolve(__dirname, '..', '..');
const COPIED = ['tools/api-report.js', 'tsconfig.json', 'CHANGELOG.md', 'libs/delay/package.json', 'libs/delay/tsconfig.lib.json'];
const SMALL_LIBRARY: Record<string, string> = {
  'index.ts': "export { DelayService } from './delay.service';\nexport type { Duration } from './time/duration';\n",
  'delay.service.ts': 'export class DelayService {\n  schedule(topic: string, key: string): Promise<void> {\n    return Promise.resolve(void [topic, key]);\n  }\n}\n',
  'time/duration.ts': 'export type Duration = number | `${number}ms` | `${number}s`;\n',
  'testing/index.ts': 'export class VirtualClock {\n  advance(ms: number): void {\n    void ms;\n  }\n}\n',
  'admin/index.ts': 'export interface DelayAdminOptions {\n  readonly path: string;\n}\n',
  'health/index.ts': 'export const DELAY_HEALTH = "delay";\n',
  'telemetry/index.ts': 'export type { Duration as TelemetryDuration } from "../time/duration";\n',
};
// Each run compiles the small library's declarations; a busy two-core machine can still take a while.
const RUN_TIMEOUT_MS = 60_000;

interface RunResult {
  readonly code: number | null;
  readonly output: string;
}

function runReport(cwd: string, mode: string): Promise<RunResult> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['tools/api-report.js', mode], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS);
    child.on('error', (error) => {
      clearTimeout(timer);
      fail(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, output });
    });
  });
}

describe('api-report --check', () => {
  let copy: string;
  const file = (relative: string): string => join(copy, relative);

  beforeAll(async () => {
    copy = mkdtempSync(join(tmpdir(), 'nestjs-delay-api-report-'));
    for (const relative of COPIED) {
      mkdirSync(dirname(file(relative)), { recursive: true });
      cpSync(join(ROOT, relative), file(relative), { recursive: true });
    }
    for (const [relative, text] of Object.entries(SMALL_LIBRARY)) {
      mkdirSync(dirname(file(`libs/delay/src/${relative}`)), { recursive: true });
      writeFileSync(file(`libs/delay/src/${relative}`), text);
    }
    symlinkSync(join(ROOT, 'node_modules'), file('node_modules'), 'dir');
    const written = await runReport(copy, '--update');
    if (written.code !== 0) throw new Error(`api-report --update failed on the small library: ${written.output}`);
    // Whatever the repository's changelog holds now, the copy starts as just after a release: the newest
    // version records the API of the small library's report, and [Unreleased] lists nothing.
    const hash = /^API hash: ([0-9a-f]{64})$/m.exec(readFileSync(file('libs/delay/api/nestjs-delay.api.md'), 'utf8'))?.[1];
    if (!hash) throw new Error('the report has no API hash line');
    const changelog = readFileSync(file('CHANGELOG.md'), 'utf8')
      .replace(/## \[Unreleased\][\s\S]*?(?=\n## \[)/, '## [Unreleased]\n\nNothing yet.\n')
      .replace(/<!-- api-hash: [0-9a-f]{64} -->/, `<!-- api-hash: ${hash} -->`);
    writeFileSync(file('CHANGELOG.md'), changelog);
  }, RUN_TIMEOUT_MS);

  afterAll(() => {
    if (copy) rmSync(copy, { recursive: true, force: true });
  });

  it('passes just after a release, and an internal change (a comment, a private member) changes nothing', async () => {
    appendFileSync(file('libs/delay/src/delay.service.ts'), '\n// a comment is no part of the API\n');
    const service = readFileSync(file('libs/delay/src/delay.service.ts'), 'utf8');
    writeFileSync(
      file('libs/delay/src/delay.service.ts'),
      service.replace(/export class DelayService \{/, 'export class DelayService {\n  private readonly apiReportProbe = 1;'),
    );
    expect(readFileSync(file('libs/delay/src/delay.service.ts'), 'utf8')).toContain('apiReportProbe');

    const result = await runReport(copy, '--check');

    expect(result.output).toBe('');
    expect(result.code).toBe(0);
  }, RUN_TIMEOUT_MS);

  it('fails when a public declaration changes and the report was not updated, and says to run api:update', async () => {
    const before = readFileSync(file('libs/delay/api/nestjs-delay.api.md'), 'utf8');
    appendFileSync(file('libs/delay/src/index.ts'), "export type { Duration as ApiReportProbe } from './time/duration';\n");

    const result = await runReport(copy, '--check');

    expect(result.code).toBe(1);
    expect(result.output).toContain('npm run api:update');
    expect(result.output).toContain('[Unreleased]');
    expect(readFileSync(file('libs/delay/api/nestjs-delay.api.md'), 'utf8')).toBe(before); // a check writes nothing
  }, RUN_TIMEOUT_MS);

  it('still fails once the report is updated, while [Unreleased] lists no change', async () => {
    const updated = await runReport(copy, '--update');
    expect(updated.code).toBe(0);
    expect(readFileSync(file('libs/delay/api/nestjs-delay.api.md'), 'utf8')).toContain('export { Duration as ApiReportProbe }');

    const result = await runReport(copy, '--check');

    expect(result.code).toBe(1);
    expect(result.output).toMatch(/differs from the one released as \d+\.\d+\.\d+/);
    expect(result.output).not.toContain('npm run api:update');
  }, RUN_TIMEOUT_MS);

  it('passes when both the report and the changelog changed', async () => {
    const changelog = readFileSync(file('CHANGELOG.md'), 'utf8');
    writeFileSync(
      file('CHANGELOG.md'),
      changelog.replace(/## \[Unreleased\]\n\nNothing yet\.\n/, '## [Unreleased]\n\n### Added\n\n- `ApiReportProbe`, another name for `Duration`.\n'),
    );
    expect(readFileSync(file('CHANGELOG.md'), 'utf8')).toContain('- `ApiReportProbe`');

    const result = await runReport(copy, '--check');

    expect(result.output).toBe('');
    expect(result.code).toBe(0);
  }, RUN_TIMEOUT_MS);

  it('fails when the package version has no section in the changelog', async () => {
    const pkg = readFileSync(file('libs/delay/package.json'), 'utf8');
    writeFileSync(file('libs/delay/package.json'), pkg.replace(/"version": "[^"]+"/, '"version": "0.3.0"'));

    const result = await runReport(copy, '--check');

    expect(result.code).toBe(1);
    expect(result.output).toContain('version 0.3.0, which has no section in CHANGELOG.md');
  }, RUN_TIMEOUT_MS);

  it('passes again once the release is cut: entries moved under the new version and its API hash recorded', async () => {
    const changelog = readFileSync(file('CHANGELOG.md'), 'utf8');
    writeFileSync(
      file('CHANGELOG.md'),
      changelog.replace(/## \[Unreleased\]\n\n/, '## [Unreleased]\n\nNothing yet.\n\n## [0.3.0] - 2030-01-01\n\n'),
    );

    const released = await runReport(copy, '--release');
    expect(released.code).toBe(0);
    const report = readFileSync(file('libs/delay/api/nestjs-delay.api.md'), 'utf8');
    const hash = /^API hash: ([0-9a-f]{64})$/m.exec(report)?.[1];
    expect(readFileSync(file('CHANGELOG.md'), 'utf8')).toContain(`## [0.3.0] - 2030-01-01\n<!-- api-hash: ${hash} -->\n`);

    const result = await runReport(copy, '--check');

    expect(result.output).toBe('');
    expect(result.code).toBe(0);
  }, RUN_TIMEOUT_MS);
});
