import { createHash } from 'node:crypto';
import { REDIS_SCRIPTS } from '../../../libs/delay/src/drivers/redis/redis-scripts.generated';
import { CommandMatcher, scriptMatcher } from '../../support/fault-proxy';

/**
 * Matches the driver's calls of the named Lua scripts (e.g. 'claim'), as the
 * proxy sees them. Read from the generated script table by name, so a change
 * of a script's source changes nothing here; a name that is gone fails loudly.
 */
export function driverScript(...names: string[]): CommandMatcher {
  const table = REDIS_SCRIPTS as Readonly<Record<string, { readonly lua: string }>>;
  const scripts = names.map((name) => {
    const script = table[name];
    if (!script) throw new Error(`the Redis driver has no script named ${name} (it has ${Object.keys(table).join(', ')})`);
    return { lua: script.lua, sha: createHash('sha1').update(script.lua).digest('hex') };
  });
  return scriptMatcher(scripts);
}
