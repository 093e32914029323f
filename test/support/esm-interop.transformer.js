// Nest 12 ships its packages as ES modules. Node runs them from CommonJS
// (require of an ES module), but Jest's module loader cannot, so the suite
// turns the ES modules it meets in node_modules into CommonJS. Files that are
// already CommonJS pass through untouched.
const ts = require('typescript');

const ES_MODULE_SYNTAX = /^\s*(import\s|import\{|export\s|export\{)/m;

module.exports = {
  getCacheKey(source, path) {
    return require('crypto').createHash('sha1').update('esm-interop-4').update(path).update(source).digest('hex');
  },
  process(source, path) {
    if (!ES_MODULE_SYNTAX.test(source)) return { code: source };
    // CommonJS has no import.meta: what Nest reads from it is the module's own URL and folder, and terminus resolves package names.
    // An ES module that makes itself a `require` (terminus does) must use CommonJS's own instead: a second one is a syntax error there.
    const ownRequire = source.replace(/^const require = createRequire\(import\.meta\.url\);$/m, '');
    const withoutImportMeta = ownRequire
      .replace(/\bimport\.meta\.url\b/g, "require('url').pathToFileURL(__filename).href")
      .replace(/\bimport\.meta\.dirname\b/g, '__dirname')
      .replace(/\bimport\.meta\.resolve\(/g, 'require.resolve(');
    const { outputText } = ts.transpileModule(withoutImportMeta, {
      fileName: path,
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, allowJs: true, esModuleInterop: true },
    });
    return { code: outputText };
  },
};
