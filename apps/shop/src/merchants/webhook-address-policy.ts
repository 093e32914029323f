import { Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { BlockList, isIP } from 'node:net';
import { ShopConfig } from '../config/shop-config.interface';
import { HostResolver } from './host-resolver';
import { specialPurposeNetwork } from './special-purpose-networks';
import { WebhookDestination } from './webhook-destination';
import { WebhookDestinationRefusedError } from './webhook-destination-refused.error';

/** A host name that takes longer than this to resolve is refused. */
const LOOKUP_TIMEOUT_MS = 3_000;

/**
 * Decides where a webhook may go. The URL's host is resolved, every address
 * it resolves to is checked, and the request then connects to a checked
 * address: a name cannot resolve to a public address for the check and to
 * an internal one for the connection (DNS rebinding). Addresses in a
 * special-purpose network (loopback, private, link-local...) are refused
 * unless WEBHOOK_ALLOWED_NETWORKS lists them.
 */
@Injectable()
export class WebhookAddressPolicy {
  private readonly allowed = new BlockList();

  constructor(
    config: ConfigService<{ shop: ShopConfig }, true>,
    private readonly resolver: HostResolver,
  ) {
    for (const { address, prefix, family } of config.get('shop', { infer: true }).webhookAllowedNetworks) this.allowed.addSubnet(address, prefix, family);
  }

  /** The destination to connect to for `url`; throws WebhookDestinationRefusedError when the shop must not call it. */
  async destination(url: string): Promise<WebhookDestination> {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new WebhookDestinationRefusedError(url, 'it is not a URL');
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new WebhookDestinationRefusedError(url, 'only http:// and https:// URLs are called');
    if (parsed.username !== '' || parsed.password !== '') throw new WebhookDestinationRefusedError(url, 'a URL with credentials in it is not accepted');
    // The URL parser has already turned 2130706433, 0x7f.1 and the like into 127.0.0.1; IPv6 comes in brackets.
    const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
    const addresses = isIP(host) !== 0 ? [{ address: host, family: isIP(host) }] : await this.lookup(url, host);
    if (addresses.length === 0) throw new WebhookDestinationRefusedError(url, `${host} does not resolve to any address`);
    const refused = addresses.map(({ address }) => this.refusal(address)).filter((reason): reason is string => reason !== undefined);
    if (refused.length > 0) {
      throw new WebhookDestinationRefusedError(
        url,
        `${host === addresses[0]?.address ? '' : `${host} resolves to `}${refused.join(', ')}; webhooks only go to public addresses (WEBHOOK_ALLOWED_NETWORKS lists exceptions)`,
      );
    }
    const [first] = addresses as [{ address: string; family: number }];
    return { url: parsed, address: first.address, family: first.family === 6 ? 6 : 4 };
  }

  /** Why the shop will not connect to `address`, or undefined when it may. */
  private refusal(address: string): string | undefined {
    const network = specialPurposeNetwork(address);
    if (network === undefined) return undefined;
    if (this.allowed.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4')) return undefined;
    return `${address}, which is ${network}`;
  }

  private async lookup(url: string, host: string): Promise<Array<{ address: string; family: number }>> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new WebhookDestinationRefusedError(url, `${host} did not resolve within ${LOOKUP_TIMEOUT_MS} ms`)), LOOKUP_TIMEOUT_MS);
    });
    try {
      return await Promise.race([this.resolver.resolve(host), timeout]);
    } catch (error) {
      if (error instanceof WebhookDestinationRefusedError) throw error;
      const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : String(error);
      throw new WebhookDestinationRefusedError(url, `${host} does not resolve (${code})`);
    } finally {
      clearTimeout(timer);
    }
  }
}
