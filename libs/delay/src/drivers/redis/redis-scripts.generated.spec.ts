import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { REDIS_SCRIPTS } from './redis-scripts.generated';

interface LuaGenerator {
  render(): string;
  readonly target: string;
}

const generator = createRequire(__filename)(join(__dirname, '..', '..', '..', '..', '..', 'tools', 'generate-lua.js')) as LuaGenerator;
const luaDir = join(__dirname, 'lua');
const luaFiles = readdirSync(luaDir)
  .filter((file) => file.endsWith('.lua'))
  .sort();

/** The leading `--[[ ... ]]` comment of a script, and the code after it. */
function split(source: string): { header: string; body: string } {
  const match = /^--\[\[\n([\s\S]*?)\n\]\]\n/.exec(source);
  return match ? { header: match[1], body: source.slice(match[0].length) } : { header: '', body: source };
}

function indices(text: string, name: 'KEYS' | 'ARGV'): number[] {
  return [...text.matchAll(new RegExp(`${name}\\[(\\d+)\\]`, 'g'))].map((match) => Number(match[1]));
}

describe('the Redis scripts', () => {
  it('ship exactly as tools/generate-lua.js renders them from the .lua sources (run `npm run generate:lua` if not)', () => {
    expect(generator.target).toBe(join(__dirname, 'redis-scripts.generated.ts'));
    expect(readFileSync(generator.target, 'utf8')).toBe(generator.render());
  });

  it('have one generated entry per .lua file', () => {
    expect(luaFiles.length).toBeGreaterThan(0);
    expect(Object.keys(REDIS_SCRIPTS).sort()).toEqual(luaFiles.map((file) => file.replace(/\.lua$/, '').replace(/-(\w)/g, (_, c: string) => c.toUpperCase())).sort());
  });

  it.each(luaFiles)('%s opens with a header naming its KEYS, ARGV and Returns', (file) => {
    const { header, body } = split(readFileSync(join(luaDir, file), 'utf8'));
    expect(header).toMatch(new RegExp(`^${file.replace(/\.lua$/, '')}: \\S`));
    expect(header).toMatch(/^KEYS\[1\] \S/m);
    expect(header).toMatch(/^ARGV\[1\] \S/m);
    expect(header).toMatch(/^Returns \S/m);
    // Every key and literal argument the code uses is documented.
    const documentedKeys = new Set(indices(header, 'KEYS'));
    const documentedArgs = new Set(indices(header, 'ARGV'));
    expect(indices(body, 'KEYS').filter((n) => !documentedKeys.has(n))).toEqual([]);
    expect(indices(body, 'ARGV').filter((n) => !documentedArgs.has(n))).toEqual([]);
  });
});
