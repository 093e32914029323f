import type { Command } from 'ioredis';
import type { RedisClient } from './redis-client';

/**
 * What a script call needs of the ioredis Script that defineCommand made (Commander.scriptsSet): its SHA, its key
 * count and its command class (which sends EVAL with the source the first time on a socket, EVALSHA after).
 */
interface DefinedScript {
  readonly sha: string;
  readonly numberOfKeys: number;
  readonly Command: new (name: string, args: Array<string | number>, options: { replyEncoding: 'utf8' }) => Command;
}

/**
 * The driver's script calls built directly, as the client's script method
 * would build them (Script.execute), but with their arguments laid out once:
 * ioredis copies a call's arguments three times and flattens them with
 * Array.prototype.flat, about 0.1 µs per argument, which is most of its cost
 * for calls of thousands (advance-series-many, complete). Used only for a
 * client that adds nothing to a call (no key prefix, auto-pipelining or
 * friendly error stacks) and is shaped as this expects; otherwise calls go
 * through the client's own methods.
 */
export class RedisScriptCalls {
  private constructor(
    private readonly client: RedisClient,
    private readonly scripts: ReadonlyMap<string, DefinedScript>,
  ) {}

  /** For the scripts `commands` that defineCommand made on `client`; undefined when calls cannot be built directly. */
  static of(client: RedisClient, commands: readonly string[]): RedisScriptCalls | undefined {
    const { options, scriptsSet } = client as unknown as { options?: { keyPrefix?: string; enableAutoPipelining?: boolean; showFriendlyErrorStack?: boolean }; scriptsSet?: Record<string, unknown> };
    if (!options || options.keyPrefix || options.enableAutoPipelining || options.showFriendlyErrorStack || !scriptsSet) return undefined;
    const scripts = new Map<string, DefinedScript>();
    for (const command of commands) {
      const script = scriptsSet[command] as Partial<DefinedScript & { keyPrefix: string; readOnly: boolean }> | undefined;
      if (typeof script?.sha !== 'string' || typeof script.numberOfKeys !== 'number' || typeof script.Command !== 'function' || script.keyPrefix || script.readOnly) return undefined;
      scripts.set(command, script as DefinedScript);
    }
    // A command built empty and given its arguments after must still name its keys (a cluster routes it by them).
    const [probe] = scripts.values();
    if (probe && scriptCommand(probe, [probe.sha, '1', 'probe-key', 'arg']).getKeys()[0] !== 'probe-key') return undefined;
    return new RedisScriptCalls(client, scripts);
  }

  /** The call of script `command`, sent; undefined when it is not one of the scripts found. */
  send(command: string, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> | undefined {
    const script = this.scripts.get(command);
    if (!script) return undefined;
    const argv: string[] = [script.sha, String(script.numberOfKeys)];
    for (let n = 0; n < keys.length; n++) argv.push(keys[n]);
    for (let n = 0; n < args.length; n++) argv.push(argText(args[n]));
    const { client } = this;
    const evalsha = scriptCommand(script, argv);
    // As Script.execute does: a NOSCRIPT (the server's script cache was flushed) is sent again, and the command class
    // sends that one as EVAL with the script's source. (It writes the source over the first argument of the command it
    // sends as EVAL: the resend gets a copy that starts with the SHA again.)
    evalsha.promise = evalsha.promise.catch((error: unknown) => {
      if (!(error instanceof Error) || !error.message.includes('NOSCRIPT')) throw error;
      const again = argv.slice();
      again[0] = script.sha;
      return client.sendCommand(scriptCommand(script, again));
    });
    return client.sendCommand(evalsha) as Promise<unknown>;
  }
}

/** An EVALSHA of `script` with `argv` (SHA, key count, keys, arguments): built with no arguments, so ioredis does not flatten them again. */
function scriptCommand(script: DefinedScript, argv: string[]): Command {
  const command = new script.Command('evalsha', [], { replyEncoding: 'utf8' });
  command.args = argv;
  return command;
}

/** An argument as ioredis 6 writes it (its toArg): an integer past the safe range in full. */
function argText(value: string | number): string {
  if (typeof value === 'string') return value;
  return Number.isInteger(value) && !Number.isSafeInteger(value) ? BigInt(value).toString() : String(value);
}
