/**
 * The unit a per-address limit counts: one client. An IPv4 address is one client; an IPv6 client
 * owns at least a /64 (SLAAC, privacy addresses), so counting whole addresses would let one host
 * rotate through 2^64 of them — the /64 is the unit. IPv4-mapped IPv6 (`::ffff:a.b.c.d`, a dual-stack
 * listener's view of an IPv4 peer) is its IPv4 address.
 */
import ipaddr from 'ipaddr.js';

export function clientAddressBucket(address: string): string {
  const bare = address.replace(/%.*$/, '');
  if (!ipaddr.isValid(bare)) return bare;
  const ip = ipaddr.process(bare);
  if (ip.kind() === 'ipv4') return ip.toString();
  const parts = (ip as ipaddr.IPv6).parts.slice(0, 4);
  return `${parts.map((p) => p.toString(16)).join(':')}::/64`;
}
