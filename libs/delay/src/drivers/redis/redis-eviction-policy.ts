import { Logger } from '@nestjs/common';
import { Cluster } from 'ioredis';
import { describeError } from '../../utils/describe-error';
import { RedisClient } from './redis-client';
import { RedisConnection } from './redis-connection';

/** The one policy under which Redis never deletes a key to make room. */
const SAFE_POLICY = 'noeviction';

/**
 * Checks at startup that Redis will not delete our keys when its memory is
 * full: any `maxmemory-policy` but noeviction may silently drop pending
 * actions. It asks with CONFIG GET (every master of a Cluster); a server
 * that refuses CONFIG (renamed or disabled, an ACL, a managed service) or
 * does not answer is not an error: the check is skipped, with a debug log.
 */
export class RedisEvictionPolicy {
  private readonly logger = new Logger(RedisEvictionPolicy.name);

  constructor(private readonly connection: RedisConnection) {}

  /** A sentence naming the evicting policy found, or undefined when none was found (or the check was refused). */
  async check(): Promise<string | undefined> {
    const client = this.connection.client;
    const nodes: RedisClient[] = client.isCluster ? (client as Cluster).nodes('master') : [client];
    let policies: string[];
    try {
      policies = await Promise.all(nodes.map((node) => this.policyOf(node)));
    } catch (error) {
      this.logger.debug(`maxmemory-policy not checked (CONFIG GET refused or unanswered): ${describeError(error)}`);
      return undefined;
    }
    const evicting = [...new Set(policies.filter((policy) => policy !== '' && policy !== SAFE_POLICY))];
    if (evicting.length === 0) return undefined;
    const detail =
      `Redis maxmemory-policy is ${evicting.map((policy) => JSON.stringify(policy)).join(', ')}: when its memory is full, Redis may delete ` +
      `pending actions without a word. Set maxmemory-policy ${SAFE_POLICY}.`;
    this.logger.error(detail);
    return detail;
  }

  private async policyOf(node: RedisClient): Promise<string> {
    const reply = await this.connection.call('CONFIG GET', () => node.config('GET', 'maxmemory-policy') as Promise<unknown>);
    // [name, value]; an empty reply when the server has no such setting.
    return Array.isArray(reply) && reply.length >= 2 ? String(reply[1]) : '';
  }
}
