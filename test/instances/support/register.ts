// A require hook for the worker processes of the multi-instance tests: it
// lets plain `node` load the worker and the library straight from their .ts
// sources. Each file is transpiled on its own with typescript.transpileModule
// (no type check: that is `npm run lint`), using the repo's tsconfig options,
// and the result is cached by content hash so later workers skip TypeScript.
// 'nestjs-delay' resolves to libs/delay/src, as in jest.config.js.
//
// The parent test compiles this file to JavaScript (see instances.ts) and
// starts each worker with `node --require <that file> worker.ts`.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import type { CompilerOptions } from 'typescript';

const root = process.env.NESTJS_DELAY_ROOT;
if (!root) throw new Error('register hook: NESTJS_DELAY_ROOT (the repository root) is not set');
const repoRoot: string = root;
const cacheDir = process.env.NESTJS_DELAY_TS_CACHE ?? join(tmpdir(), 'nestjs-delay-instances-ts-cache');

const ALIASES: Record<string, string> = {
  'nestjs-delay': join(repoRoot, 'libs', 'delay', 'src', 'index.ts'),
  'nestjs-delay/testing': join(repoRoot, 'libs', 'delay', 'src', 'testing', 'index.ts'),
};

type ResolveFilename = (request: string, parent: unknown, isMain: boolean, options?: unknown) => string;
interface ModuleInternals {
  _resolveFilename: ResolveFilename;
}
interface CompilableModule {
  _compile(code: string, filename: string): void;
}

const internals = Module as unknown as ModuleInternals;
const resolveFilename = internals._resolveFilename;
internals._resolveFilename = function (request: string, parent: unknown, isMain: boolean, options?: unknown): string {
  return resolveFilename.call(this, ALIASES[request] ?? request, parent, isMain, options);
};

const tsconfigText = readFileSync(join(repoRoot, 'tsconfig.json'), 'utf8');
let compilerOptions: CompilerOptions | undefined;

function transpile(source: string, filename: string): string {
  // Loaded only on a cache miss: most workers never pay for TypeScript.
  const ts = createRequire(join(repoRoot, 'package.json'))('typescript') as typeof import('typescript');
  if (!compilerOptions) {
    const parsed = ts.parseConfigFileTextToJson(join(repoRoot, 'tsconfig.json'), tsconfigText);
    const raw = (parsed.config as { compilerOptions?: object } | undefined)?.compilerOptions ?? {};
    compilerOptions = {
      ...ts.convertCompilerOptionsFromJson(raw, repoRoot).options,
      module: ts.ModuleKind.CommonJS,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      sourceMap: false,
      inlineSourceMap: true,
      inlineSources: false,
      declaration: false,
      noEmit: false,
    };
  }
  return ts.transpileModule(source, { compilerOptions, fileName: filename }).outputText;
}

function compiled(source: string, filename: string): string {
  const hash = createHash('sha1').update(tsconfigText).update('\0').update(filename).update('\0').update(source).digest('hex');
  const cached = join(cacheDir, `${hash}.js`);
  try {
    return readFileSync(cached, 'utf8');
  } catch {
    // not cached yet
  }
  const output = transpile(source, filename);
  mkdirSync(cacheDir, { recursive: true });
  // Write then rename, so a worker starting at the same time never reads half a file.
  const partial = `${cached}.${process.pid}.tmp`;
  writeFileSync(partial, output);
  renameSync(partial, cached);
  return output;
}

require.extensions['.ts'] = (module: NodeJS.Module, filename: string): void => {
  if (filename.includes(`${sep}node_modules${sep}`)) throw new Error(`register hook: will not transpile ${filename}`);
  (module as unknown as CompilableModule)._compile(compiled(readFileSync(filename, 'utf8'), filename), filename);
};
