import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';

/*
 * Every ```ts block of README.md, of the package's own README
 * (libs/delay/README.md, the one the registry shows) and of the documentation
 * site's pages (docs/**\/*.md; not the API reference TypeDoc generates) is type-checked, as written, under the
 * tsconfigs users have: Nest 10's (CommonJS, node10 resolution, not strict),
 * Nest 12's `nest new` (nodenext, isolatedModules with emitDecoratorMetadata,
 * strict) and an ES-module app ("type": "module", nodenext). `nestjs-delay`
 * resolves to the library's sources, as everywhere in this repository; the
 * packed package itself is checked by `npm run compat`.
 *
 * What the examples may take for granted, and so the test provides:
 * - PRELUDE: the application's own types the examples use without defining
 *   them (Order, OrdersRepository, WebhookClient, ...), as ambient declarations;
 * - APP_FILES: the app's own modules the examples import by relative path
 *   (`../src/app.module`, `./orders.service`, ...), as empty classes;
 * - FRAGMENT_IMPORTS: a block with no import statement is a fragment (an
 *   option object, a class excerpt) and is compiled after these imports.
 *   A block with imports must be complete: it is what a reader copies.
 * In the ES-module variant, relative imports get the `.js` an ESM app
 * writes; nothing else is changed.
 */

const ROOT = path.resolve(__dirname, '..', '..');
/** The documentation site's pages, relative to the repository: docs/ but its generated API reference and the site's own folder. */
function docsPages(dir = 'docs'): string[] {
  const pages: string[] = [];
  for (const name of readdirSync(path.join(ROOT, dir)).sort()) {
    const file = `${dir}/${name}`;
    if (statSync(path.join(ROOT, file)).isDirectory()) {
      if (file !== 'docs/api' && name !== '.vitepress' && name !== 'node_modules') pages.push(...docsPages(file));
    } else if (name.endsWith('.md')) {
      pages.push(file);
    }
  }
  return pages;
}

const READMES = ['README.md', 'libs/delay/README.md', ...docsPages()];

/**
 * How many ```ts blocks the guides held when the long README became the site (29, all moved to docs/):
 * a page that loses its examples, or a fence the pattern no longer sees, fails "are found".
 */
const DOCS_EXAMPLES_AT_LEAST = 29;

const PRELUDE = `
interface Order { readonly id: string; readonly total: number }
interface OrderEvent { readonly type: string; readonly orderId: string }
declare class OrdersRepository {
  save(order: Order): Promise<void>;
  markPaid(orderId: string): Promise<void>;
  cancelIfUnpaid(orderId: string): Promise<void>;
}
declare class WebhookClient { post(merchantId: string, events: readonly OrderEvent[]): Promise<void> }
declare class Mailer { sendInvoice(orderId: string, options: { idempotencyKey: string }): Promise<void> }
declare class OrdersService {}
declare class OrderTimeouts {}
declare class SettingsModule {}
/** An app's Prisma service (PrismaClient generated from its schema), as far as the examples use it. */
interface PrismaTransactionClient {
  readonly order: { create(args: { data: Order }): Promise<Order> };
  readonly invoice: { create(args: { data: { orderId: string } }): Promise<{ orderId: string }> };
}
declare class PrismaService { $transaction<T>(work: (tx: PrismaTransactionClient) => Promise<T>, options?: { maxWait?: number; timeout?: number }): Promise<T> }
declare class PrismaModule {}
`;

const APP_FILES: Record<string, string> = {
  'app.module.ts': `import { Module } from '@nestjs/common';\n@Module({})\nexport class AppModule {}\n`,
  'orders.service.ts': `export class OrdersService {}\n`,
  'order-timeouts.ts': `export class OrderTimeouts {}\n`,
};

const FRAGMENT_IMPORTS = [
  `import { Injectable, Module } from '@nestjs/common';`,
  `import { ConfigModule, ConfigService } from '@nestjs/config';`,
  `import { DelayModule, DelayService, OnDelayExpired } from 'nestjs-delay';`,
  `import type { BatchStatus, DelayContext, DelayModuleOptions, DelayOptionsFactory, Duration } from 'nestjs-delay';`,
  '',
].join('\n');

interface Example {
  /** The README or docs page, relative to the repository. */
  readonly file: string;
  readonly index: number;
  /** Line of README.md where the block's code starts. */
  readonly line: number;
  readonly code: string;
}

function readmeExamples(): Example[] {
  const examples: Example[] = [];
  for (const file of READMES) {
    const text = readFileSync(path.join(ROOT, file), 'utf8');
    const fence = /^```ts\n([\s\S]*?)^```$/gm;
    for (let match = fence.exec(text); match; match = fence.exec(text)) {
      const line = text.slice(0, match.index).split('\n').length + 1;
      examples.push({ file, index: examples.length + 1, line, code: match[1] });
    }
  }
  return examples;
}

const shared: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
  esModuleInterop: true,
  allowSyntheticDefaultImports: true,
  skipLibCheck: true,
  noEmit: true,
  types: ['node', 'jest'],
  baseUrl: ROOT,
  paths: {
    'nestjs-delay': ['libs/delay/src/index.ts'],
    'nestjs-delay/testing': ['libs/delay/src/testing/index.ts'],
    'nestjs-delay/admin': ['libs/delay/src/admin/index.ts'],
    'nestjs-delay/health': ['libs/delay/src/health/index.ts'],
    'nestjs-delay/telemetry': ['libs/delay/src/telemetry/index.ts'],
  },
};

interface Variant {
  readonly name: string;
  readonly options: ts.CompilerOptions;
  readonly esm: boolean;
}

const VARIANTS: Variant[] = [
  {
    name: 'Nest 10 tsconfig (commonjs, node10)',
    esm: false,
    options: { ...shared, module: ts.ModuleKind.CommonJS, moduleResolution: ts.ModuleResolutionKind.Node10, strict: false },
  },
  {
    name: 'Nest 12 nest new tsconfig (nodenext, isolatedModules)',
    esm: false,
    options: { ...shared, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, isolatedModules: true, strict: true, strictPropertyInitialization: false },
  },
  {
    name: 'ES-module app ("type": "module", nodenext)',
    esm: true,
    options: { ...shared, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, isolatedModules: true, strict: true, strictPropertyInitialization: false },
  },
];

function withJsExtensions(code: string): string {
  return code.replace(/(from\s+'\.{1,2}\/[^']+?)(?<!\.js)'/g, `$1.js'`);
}

/** Type-checks the examples as files of one small virtual app; returns one line per problem. */
function typeCheck(examples: Example[], variant: Variant): string[] {
  // Virtual files live in a folder of their own inside the repository, so that
  // packages resolve from its node_modules; nothing is written to disk.
  const appDir = path.join(ROOT, 'test', 'docs', variant.esm ? '.readme-app-esm' : '.readme-app');
  const virtual = new Map<string, string>();
  virtual.set(path.join(appDir, 'package.json'), JSON.stringify({ name: 'readme-app', private: true, ...(variant.esm ? { type: 'module' } : {}) }));
  virtual.set(path.join(appDir, 'src', 'prelude.d.ts'), PRELUDE);
  for (const [name, text] of Object.entries(APP_FILES)) virtual.set(path.join(appDir, 'src', name), text);
  const headerLines = new Map<string, number>();
  for (const example of examples) {
    const fragment = !/^import\s/m.test(example.code);
    const header = fragment ? FRAGMENT_IMPORTS : '';
    const body = variant.esm ? withJsExtensions(example.code) : example.code;
    // `export {}` makes every block a module, so blocks never see each other's names.
    const file = path.join(appDir, 'src', `readme-${example.index}.ts`);
    virtual.set(file, `${header}${body}\nexport {};\n`);
    headerLines.set(file, header.split('\n').length - 1);
  }

  const host = ts.createCompilerHost(variant.options, true);
  const { fileExists, readFile, getSourceFile, directoryExists } = host;
  host.fileExists = (name) => virtual.has(path.resolve(name)) || fileExists.call(host, name);
  host.directoryExists = (name) => path.resolve(name).startsWith(appDir) || (directoryExists?.call(host, name) ?? true);
  host.readFile = (name) => virtual.get(path.resolve(name)) ?? readFile.call(host, name);
  host.getSourceFile = (name, languageVersion, onError, shouldCreate) => {
    const text = virtual.get(path.resolve(name));
    if (text !== undefined) return ts.createSourceFile(name, text, languageVersion, true);
    return getSourceFile.call(host, name, languageVersion, onError, shouldCreate);
  };

  const roots = [...virtual.keys()].filter((name) => name.endsWith('.ts'));
  const program = ts.createProgram(roots, variant.options, host);
  const problems: string[] = [];
  for (const sourceFile of program.getSourceFiles()) {
    const name = path.resolve(sourceFile.fileName);
    if (!virtual.has(name)) continue;
    const diagnostics = [...program.getSyntacticDiagnostics(sourceFile), ...program.getSemanticDiagnostics(sourceFile)];
    for (const diagnostic of diagnostics) {
      const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
      const example = examples.find((candidate) => path.join(appDir, 'src', `readme-${candidate.index}.ts`) === name);
      const lineInFile = diagnostic.start === undefined ? 0 : sourceFile.getLineAndCharacterOfPosition(diagnostic.start).line;
      const where = example ? `${example.file}:${example.line + lineInFile - (headerLines.get(name) ?? 0)} (block ${example.index})` : path.basename(name);
      problems.push(`${where}: TS${diagnostic.code} ${message}`);
    }
  }
  return problems;
}

describe('The TypeScript examples of the READMEs', () => {
  const examples = readmeExamples();

  it('are found', () => {
    // A README without ts blocks (or a broken fence pattern) would make the checks below pass on nothing.
    expect(examples.filter((example) => example.file === 'README.md').length).toBeGreaterThanOrEqual(5);
    expect(examples.filter((example) => example.file === 'libs/delay/README.md').length).toBeGreaterThanOrEqual(3);
    expect(examples.filter((example) => example.file.startsWith('docs/')).length).toBeGreaterThanOrEqual(DOCS_EXAMPLES_AT_LEAST);
  });

  it('include every page of the guides, and every README example is also on a page of the site', () => {
    const files = new Set(examples.map((example) => example.file));
    for (const page of ['docs/guide/getting-started.md', 'docs/guide/api.md', 'docs/guide/transactions.md', 'docs/guide/recurring.md', 'docs/drivers/postgres.md', 'docs/operations/admin.md']) {
      expect(files).toContain(page);
    }
    // The front page shows a few of the guides' examples; each is checked here and is also on the site.
    const onSite = new Set(examples.filter((example) => example.file.startsWith('docs/')).map((example) => example.code));
    const frontPageOnly = examples.filter((example) => example.file === 'README.md' && !onSite.has(example.code));
    expect(frontPageOnly.map((example) => `README.md:${example.line}`)).toEqual([]);
  });

  it.each(VARIANTS.map((variant) => [variant.name, variant] as const))('compile under the %s', (_name, variant) => {
    expect(typeCheck(examples, variant)).toEqual([]);
  });

  it('would report a broken example, with its README line', () => {
    const broken: Example = { file: 'README.md', index: 99, line: 1000, code: `import { DelayService } from 'nestjs-delay';\nconst n: number = DelayService.name;\n` };
    const problems = typeCheck([broken], VARIANTS[1]);
    expect(problems).toEqual([expect.stringMatching(/^README\.md:1001 \(block 99\): TS2322 /)]);
  });

  it('really compiles the ES-module variant as ES modules, and the others as CommonJS', () => {
    const topLevelAwait: Example = { file: 'README.md', index: 98, line: 1, code: `import { parseDuration } from 'nestjs-delay';\nawait Promise.resolve(parseDuration('1s'));\n` };
    expect(typeCheck([topLevelAwait], VARIANTS[2])).toEqual([]);
    expect(typeCheck([topLevelAwait], VARIANTS[1])).toEqual([expect.stringContaining('TS1309')]);
  });
});
