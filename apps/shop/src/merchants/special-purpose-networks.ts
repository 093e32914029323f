import { BlockList, isIP } from 'node:net';

/**
 * Networks a webhook may not reach: loopback, private, link-local, shared
 * (carrier NAT), unique-local IPv6, multicast, documentation and reserved
 * ranges, and the IPv6 forms that carry an IPv4 address (mapped, compatible,
 * NAT64, 6to4, Teredo). A name that resolves into any of them is refused,
 * so a merchant's URL cannot make the shop call its own Redis, a cloud
 * metadata service or anything else inside its network.
 */
const NETWORKS: ReadonlyArray<readonly [string, number, 'ipv4' | 'ipv6', string]> = [
  ['0.0.0.0', 8, 'ipv4', '"this network" (0.0.0.0/8)'],
  ['10.0.0.0', 8, 'ipv4', 'private (10.0.0.0/8)'],
  ['100.64.0.0', 10, 'ipv4', 'shared carrier NAT (100.64.0.0/10)'],
  ['127.0.0.0', 8, 'ipv4', 'loopback (127.0.0.0/8)'],
  ['169.254.0.0', 16, 'ipv4', 'link-local (169.254.0.0/16)'],
  ['172.16.0.0', 12, 'ipv4', 'private (172.16.0.0/12)'],
  ['192.0.0.0', 24, 'ipv4', 'IETF protocol assignments (192.0.0.0/24)'],
  ['192.0.2.0', 24, 'ipv4', 'documentation (192.0.2.0/24)'],
  ['192.88.99.0', 24, 'ipv4', '6to4 relay (192.88.99.0/24)'],
  ['192.168.0.0', 16, 'ipv4', 'private (192.168.0.0/16)'],
  ['198.18.0.0', 15, 'ipv4', 'benchmarking (198.18.0.0/15)'],
  ['198.51.100.0', 24, 'ipv4', 'documentation (198.51.100.0/24)'],
  ['203.0.113.0', 24, 'ipv4', 'documentation (203.0.113.0/24)'],
  ['224.0.0.0', 4, 'ipv4', 'multicast (224.0.0.0/4)'],
  ['240.0.0.0', 4, 'ipv4', 'reserved or broadcast (240.0.0.0/4)'],
  ['::', 128, 'ipv6', 'unspecified (::)'],
  ['::1', 128, 'ipv6', 'loopback (::1)'],
  ['::', 96, 'ipv6', 'IPv4-compatible (::/96)'],
  ['::ffff:0:0', 96, 'ipv6', 'IPv4-mapped (::ffff:0:0/96)'],
  ['64:ff9b::', 96, 'ipv6', 'NAT64 (64:ff9b::/96)'],
  ['64:ff9b:1::', 48, 'ipv6', 'local NAT64 (64:ff9b:1::/48)'],
  ['100::', 64, 'ipv6', 'discard (100::/64)'],
  ['2001::', 23, 'ipv6', 'IETF protocol assignments, Teredo included (2001::/23)'],
  ['2001:db8::', 32, 'ipv6', 'documentation (2001:db8::/32)'],
  ['2002::', 16, 'ipv6', '6to4 (2002::/16)'],
  ['fc00::', 7, 'ipv6', 'unique-local (fc00::/7)'],
  ['fe80::', 10, 'ipv6', 'link-local (fe80::/10)'],
  ['fec0::', 10, 'ipv6', 'site-local (fec0::/10)'],
  ['ff00::', 8, 'ipv6', 'multicast (ff00::/8)'],
];

const LISTS = NETWORKS.map(([network, prefix, family, name]) => {
  const list = new BlockList();
  list.addSubnet(network, prefix, family);
  return { list, family, name };
});

/**
 * The special-purpose network `address` is in, e.g. 'loopback (127.0.0.0/8)',
 * or undefined for a public address. An IPv4-mapped IPv6 address
 * (::ffff:127.0.0.1, ::ffff:7f00:1) is named as mapped, whatever it maps.
 */
export function specialPurposeNetwork(address: string): string | undefined {
  const family = isIP(address);
  if (family === 0) return 'not an IP address';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  // BlockList matches an IPv4-mapped IPv6 address against IPv4 rules too; only rules of the address's own family name it.
  return LISTS.find(({ list, family: listFamily }) => listFamily === type && list.check(address, type))?.name;
}
