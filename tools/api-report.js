#!/usr/bin/env node
/*
 * The library's public API report, and the check that every change to it is in CHANGELOG.md.
 *
 * The report (libs/delay/api/nestjs-delay.api.md) holds, for each entry point named in
 * libs/delay/package.json "exports", the names it exports, then every declaration those names reach:
 * the declarations TypeScript emits for the library (comments removed, private members left out),
 * sorted by file, so a diff of the report reads as a diff of the API. Its header holds a hash of that body.
 *
 * Each released version's section in CHANGELOG.md records the hash of the API it shipped with:
 *   ## [0.2.0] - 2026-11-26
 *   <!-- api-hash: 0123abcd... -->
 *
 *   node tools/api-report.js            # same as --update
 *   node tools/api-report.js --update   # rewrite the report from the sources (npm run api:update)
 *   node tools/api-report.js --check    # part of npm run lint; fails when
 *       (a) the report differs from the sources' API: run npm run api:update and commit the report;
 *       (b) the API differs from the one the newest release recorded and [Unreleased] lists no change;
 *       (c) libs/delay/package.json's version has no section in CHANGELOG.md.
 *   node tools/api-report.js --release  # npm run api:release, when cutting a release: record the current API's hash on the
 *       newest released section (after moving the [Unreleased] entries there and setting the version).
 *
 * Needs no build, no git history and no tags: it compiles the sources in memory with the repository's
 * TypeScript, so it works the same on a fresh clone.
 */
'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const LIB_DIR = path.join(ROOT, 'libs', 'delay');
const REPORT_FILE = path.join(LIB_DIR, 'api', 'nestjs-delay.api.md');
const CHANGELOG_FILE = path.join(ROOT, 'CHANGELOG.md');
const HASH_MARK = /<!--\s*api-hash:\s*([0-9a-f]{64})\s*-->/;

function loadTypeScript() {
  return require(require.resolve('typescript', { paths: [ROOT] }));
}

/** The emitted declaration files of the library, by path relative to its outDir (posix separators). */
function emitDeclarations(ts) {
  const configPath = path.join(LIB_DIR, 'tsconfig.lib.json');
  const host = {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
    },
  };
  const config = ts.getParsedCommandLineOfConfigFile(configPath, {}, host);
  if (config.errors.length > 0) throw new Error(ts.formatDiagnostics(config.errors, formatHost(ts)));
  const options = {
    ...config.options,
    noEmit: false,
    declaration: true,
    emitDeclarationOnly: true,
    removeComments: true,
    sourceMap: false,
    declarationMap: false,
    inlineSources: false,
  };
  const program = ts.createProgram(config.fileNames, options);
  const files = new Map();
  const result = program.emit(
    undefined,
    (fileName, text) => files.set(path.relative(options.outDir, fileName).split(path.sep).join('/'), text),
    undefined,
    true,
  );
  const problems = [...ts.getPreEmitDiagnostics(program), ...result.diagnostics].filter(
    (diagnostic) => diagnostic.category === ts.DiagnosticCategory.Error,
  );
  if (problems.length > 0) throw new Error(`the library does not compile:\n${ts.formatDiagnostics(problems, formatHost(ts))}`);
  return files;
}

function formatHost(ts) {
  return { getCanonicalFileName: (f) => f, getCurrentDirectory: () => ROOT, getNewLine: () => '\n' };
}

/** Entry points from package.json "exports": subpath -> declaration file relative to the outDir. */
function entryPoints() {
  const pkg = JSON.parse(fs.readFileSync(path.join(LIB_DIR, 'package.json'), 'utf8'));
  const entries = [];
  for (const [subpath, target] of Object.entries(pkg.exports ?? {})) {
    const types = typeof target === 'object' && target !== null ? target.types : undefined;
    if (typeof types !== 'string') continue;
    const file = types.replace(/^\.\/dist\//, '');
    const name = subpath === '.' ? pkg.name : `${pkg.name}/${subpath.replace(/^\.\//, '')}`;
    entries.push({ name, file });
  }
  if (entries.length === 0) throw new Error('libs/delay/package.json "exports" names no entry point with "types"');
  return entries;
}

/**
 * Walks from the entry points through the emitted declarations and returns the report's body:
 * what each entry point exports, then every declaration reached, file by file.
 */
function buildReport(ts, files, entries) {
  const parsed = new Map();
  const sourceOf = (file) => {
    if (!parsed.has(file)) {
      const text = files.get(file);
      if (text === undefined) throw new Error(`no declarations emitted for ${file}`);
      parsed.set(file, ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true));
    }
    return parsed.get(file);
  };
  const resolveModule = (from, specifier) => {
    if (!specifier.startsWith('.')) return undefined; // a package (rxjs, @nestjs/common): not ours
    const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier));
    return [`${base}.d.ts`, `${base}/index.d.ts`].find((candidate) => files.has(candidate));
  };

  /** file -> { locals: name -> statements, imports: name -> {file, name}, exports: name -> {file, name}, stars: files } */
  const scopes = new Map();
  const scopeOf = (file) => {
    if (scopes.has(file)) return scopes.get(file);
    const source = sourceOf(file);
    const scope = { locals: new Map(), imports: new Map(), exports: new Map(), stars: [] };
    const addLocal = (name, statement) => {
      if (!scope.locals.has(name)) scope.locals.set(name, []);
      scope.locals.get(name).push(statement);
    };
    for (const statement of source.statements) {
      if (ts.isImportDeclaration(statement)) {
        const target = resolveModule(file, statement.moduleSpecifier.text);
        const clause = statement.importClause;
        if (!target || !clause) continue;
        if (clause.name) scope.imports.set(clause.name.text, { file: target, name: 'default' });
        const bindings = clause.namedBindings;
        if (bindings && ts.isNamedImports(bindings)) {
          for (const element of bindings.elements) {
            scope.imports.set(element.name.text, { file: target, name: (element.propertyName ?? element.name).text });
          }
        }
      } else if (ts.isExportDeclaration(statement)) {
        const target = statement.moduleSpecifier ? resolveModule(file, statement.moduleSpecifier.text) : file;
        if (statement.moduleSpecifier && !target) continue;
        if (!statement.exportClause) {
          scope.stars.push(target);
        } else if (ts.isNamedExports(statement.exportClause)) {
          for (const element of statement.exportClause.elements) {
            const local = (element.propertyName ?? element.name).text;
            scope.exports.set(element.name.text, statement.moduleSpecifier ? { file: target, name: local } : { file, name: local, local: true });
          }
        }
      } else if (ts.isVariableStatement(statement)) {
        for (const declaration of statement.declarationList.declarations) {
          if (ts.isIdentifier(declaration.name)) addLocal(declaration.name.text, statement);
        }
      } else if (statement.name && ts.isIdentifier(statement.name)) {
        addLocal(statement.name.text, statement);
      }
    }
    scopes.set(file, scope);
    return scope;
  };

  /** Resolves an exported name of a file to the file and local name that declare it. */
  const resolveExport = (file, name, seen = new Set()) => {
    const key = `${file}#${name}`;
    if (seen.has(key)) return undefined;
    seen.add(key);
    const scope = scopeOf(file);
    const exported = scope.exports.get(name);
    if (exported) return exported.local ? resolveLocal(file, exported.name, seen) : resolveExport(exported.file, exported.name, seen);
    const statements = scope.locals.get(name);
    if (statements && statements.some(isExported)) return { file, name };
    for (const star of scope.stars) {
      const found = resolveExport(star, name, seen);
      if (found) return found;
    }
    return undefined;
  };
  const resolveLocal = (file, name, seen = new Set()) => {
    const scope = scopeOf(file);
    if (scope.locals.has(name)) return { file, name };
    const imported = scope.imports.get(name);
    return imported ? resolveExport(imported.file, imported.name, seen) : undefined;
  };
  const isExported = (statement) => (statement.modifiers ?? []).some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword);

  /** Every name a file exports, following export * (sorted). */
  const exportedNames = (file, seen = new Set()) => {
    if (seen.has(file)) return new Set();
    seen.add(file);
    const scope = scopeOf(file);
    const names = new Set(scope.exports.keys());
    for (const [name, statements] of scope.locals) if (statements.some(isExported)) names.add(name);
    for (const star of scope.stars) for (const name of exportedNames(star, seen)) if (name !== 'default') names.add(name);
    return names;
  };

  const reached = new Map(); // statement -> file
  const queue = [];
  const reach = (target) => {
    if (!target) return;
    for (const statement of scopeOf(target.file).locals.get(target.name) ?? []) {
      if (!reached.has(statement)) {
        reached.set(statement, target.file);
        queue.push({ statement, file: target.file });
      }
    }
  };

  const lines = [];
  for (const entry of entries) {
    lines.push(`// ${entry.name}`);
    const names = [...exportedNames(entry.file)].sort();
    for (const name of names) {
      const target = resolveExport(entry.file, name);
      if (!target) throw new Error(`${entry.name}: cannot find the declaration of ${name}`);
      lines.push(`export { ${target.name === name ? name : `${target.name} as ${name}`} } // ${target.file.replace(/\.d\.ts$/, '')}`);
      reach(target);
    }
    lines.push('');
  }

  while (queue.length > 0) {
    const { statement, file } = queue.shift();
    // Only names used as types, base classes, typeof or computed keys lead to other declarations
    // (a property that happens to share a declaration's name does not).
    const leftmost = (name) => {
      let node = name;
      while (ts.isQualifiedName(node) || ts.isPropertyAccessExpression(node)) node = ts.isQualifiedName(node) ? node.left : node.expression;
      return ts.isIdentifier(node) ? node.text : undefined;
    };
    const follow = (name) => {
      const text = leftmost(name);
      if (text !== undefined) reach(resolveLocal(file, text));
    };
    const visit = (node) => {
      if (ts.isTypeReferenceNode(node)) follow(node.typeName);
      else if (ts.isExpressionWithTypeArguments(node)) follow(node.expression);
      else if (ts.isTypeQueryNode(node)) follow(node.exprName);
      else if (ts.isComputedPropertyName(node)) follow(node.expression);
      else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
        const target = resolveModule(file, node.argument.literal.text);
        if (target && node.qualifier) reach(resolveExport(target, leftmost(node.qualifier)));
      }
      ts.forEachChild(node, visit);
    };
    ts.forEachChild(statement, visit);
  }

  const printer = ts.createPrinter({ removeComments: true, newLine: ts.NewLineKind.LineFeed });
  const byFile = new Map();
  for (const [statement, file] of reached) {
    if (!byFile.has(file)) byFile.set(file, []);
    byFile.get(file).push(statement);
  }
  for (const file of [...byFile.keys()].sort()) {
    lines.push(`// ${file.replace(/\.d\.ts$/, '')}`);
    // What the file's declarations take from packages (Nest, rxjs), so the names below read unambiguously.
    for (const statement of sourceOf(file).statements) {
      if (ts.isImportDeclaration(statement) && !statement.moduleSpecifier.text.startsWith('.')) {
        lines.push(printer.printNode(ts.EmitHint.Unspecified, statement, sourceOf(file)));
      }
    }
    const statements = byFile.get(file).sort((a, b) => a.pos - b.pos);
    for (const statement of statements) lines.push(printer.printNode(ts.EmitHint.Unspecified, withoutPrivateMembers(ts, statement), sourceOf(file)));
    lines.push('');
  }
  return lines.join('\n').trimEnd() + '\n';
}

/** A class without its private members (they are no part of the API); a private constructor stays. */
function withoutPrivateMembers(ts, statement) {
  if (!ts.isClassDeclaration(statement)) return statement;
  const members = statement.members.filter((member) => {
    if (ts.isConstructorDeclaration(member)) return true;
    if (member.name && ts.isPrivateIdentifier(member.name)) return false;
    return (ts.getCombinedModifierFlags(member) & ts.ModifierFlags.Private) === 0;
  });
  if (members.length === statement.members.length) return statement;
  return ts.factory.updateClassDeclaration(statement, statement.modifiers, statement.name, statement.typeParameters, statement.heritageClauses, members);
}

function hashOf(body) {
  return crypto.createHash('sha256').update(body).digest('hex');
}

function renderReport(body) {
  return [
    '# nestjs-delay: public API report',
    '',
    'Generated by `npm run api:update` (tools/api-report.js) from the declarations of every entry point in',
    'libs/delay/package.json "exports". Do not edit by hand. `npm run lint` fails when the sources no longer match',
    'this file, and when the API differs from the newest release recorded in CHANGELOG.md while [Unreleased] is empty.',
    '',
    `API hash: ${hashOf(body)}`,
    '',
    '```ts',
    body.trimEnd(),
    '```',
    '',
  ].join('\n');
}

/** The changelog's sections: [Unreleased] and each release with its recorded API hash. */
function readChangelog() {
  if (!fs.existsSync(CHANGELOG_FILE)) throw new Error('CHANGELOG.md is missing at the repository root');
  const text = fs.readFileSync(CHANGELOG_FILE, 'utf8');
  const sections = [];
  const heading = /^## \[([^\]]+)\](.*)$/gm;
  let match;
  const starts = [];
  while ((match = heading.exec(text)) !== null) starts.push({ title: match[1], index: match.index, bodyStart: match.index + match[0].length });
  for (let i = 0; i < starts.length; i++) {
    const end = i + 1 < starts.length ? starts[i + 1].index : text.length;
    const body = text.slice(starts[i].bodyStart, end).replace(/^\[[^\]]+\]:.*$/gm, ''); // link definitions at the end
    const hash = HASH_MARK.exec(body);
    sections.push({ title: starts[i].title, index: starts[i].index, bodyStart: starts[i].bodyStart, body, hash: hash ? hash[1] : undefined });
  }
  return { text, sections };
}

/** Entries are list items; a line such as "Nothing yet." is not one. */
function hasEntries(section) {
  return /^\s*[-*] +\S/m.test(section.body);
}

function check(report) {
  const problems = [];
  // Line endings as a checkout may have converted them do not count as a change.
  const current = fs.existsSync(REPORT_FILE) ? fs.readFileSync(REPORT_FILE, 'utf8').replace(/\r\n/g, '\n') : undefined;
  if (current !== report.text) {
    problems.push(
      current === undefined
        ? `${path.relative(ROOT, REPORT_FILE)} is missing. Run \`npm run api:update\` and commit it.`
        : `The public API no longer matches ${path.relative(ROOT, REPORT_FILE)}. Run \`npm run api:update\`, review the diff of the report, ` +
            'commit it, and describe the change for users under [Unreleased] in CHANGELOG.md.',
    );
  }
  const { sections } = readChangelog();
  const unreleased = sections.find((section) => section.title.toLowerCase() === 'unreleased');
  const released = sections.find((section) => /^\d+\.\d+\.\d+/.test(section.title));
  if (!unreleased) problems.push('CHANGELOG.md has no [Unreleased] section.');
  if (!released) problems.push('CHANGELOG.md has no released version section.');
  else if (!released.hash) problems.push(`CHANGELOG.md: the [${released.title}] section records no API hash. Run \`node tools/api-report.js --release\`.`);
  else if (released.hash !== report.hash && unreleased && !hasEntries(unreleased)) {
    problems.push(
      `The public API differs from the one released as ${released.title}, and CHANGELOG.md lists nothing under [Unreleased]. ` +
        'Add an entry there saying what changed for users (under Added, Changed, Fixed or Removed; with an upgrade note if it breaks code).',
    );
  }
  const version = JSON.parse(fs.readFileSync(path.join(LIB_DIR, 'package.json'), 'utf8')).version;
  if (!sections.some((section) => section.title === version)) {
    problems.push(`libs/delay/package.json says version ${version}, which has no section in CHANGELOG.md.`);
  }
  return problems;
}

/** Records the current hash on the newest released section, replacing the one it had. */
function recordRelease(report) {
  const { text, sections } = readChangelog();
  const index = sections.findIndex((section) => /^\d+\.\d+\.\d+/.test(section.title));
  if (index < 0) throw new Error('CHANGELOG.md has no released version section to record the API hash on');
  const released = sections[index];
  const end = index + 1 < sections.length ? sections[index + 1].index : text.length;
  const original = text.slice(released.bodyStart, end);
  const mark = `<!-- api-hash: ${report.hash} -->`;
  const updated = HASH_MARK.test(original) ? original.replace(HASH_MARK, mark) : `\n${mark}${original}`;
  fs.writeFileSync(CHANGELOG_FILE, text.slice(0, released.bodyStart) + updated + text.slice(end));
  return released.title;
}

function generate() {
  const ts = loadTypeScript();
  const body = buildReport(ts, emitDeclarations(ts), entryPoints());
  return { text: renderReport(body), hash: hashOf(body) };
}

function main(argv) {
  const mode = argv[0] ?? '--update';
  if (!['--update', '--check', '--release'].includes(mode) || argv.length > 1) {
    console.error('usage: node tools/api-report.js [--update | --check | --release]');
    return 2;
  }
  const report = generate();
  if (mode === '--check') {
    const problems = check(report);
    for (const problem of problems) console.error(`api-report: ${problem}`);
    return problems.length > 0 ? 1 : 0;
  }
  fs.mkdirSync(path.dirname(REPORT_FILE), { recursive: true });
  const before = fs.existsSync(REPORT_FILE) ? fs.readFileSync(REPORT_FILE, 'utf8') : undefined;
  fs.writeFileSync(REPORT_FILE, report.text);
  process.stdout.write(`api-report: ${path.relative(ROOT, REPORT_FILE)} ${before === report.text ? 'unchanged' : 'written'} (API hash ${report.hash.slice(0, 12)})\n`);
  if (mode === '--release') process.stdout.write(`api-report: recorded the API hash on [${recordRelease(report)}] in CHANGELOG.md\n`);
  return 0;
}

try {
  process.exitCode = main(process.argv.slice(2));
} catch (error) {
  console.error(`api-report: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
}
