/**
 * Which addresses a tenant's `http` App may be on. Only public unicast passes: an allow-list (ranges
 * from `ipaddr.js`, maintained with the IANA special-purpose registries), so a range nobody thought
 * of is refused rather than reached. IPv6 forms that carry an IPv4 address (mapped, SIIT, NAT64,
 * 6to4) are judged by the IPv4 address they lead to; IPv4-compatible (`::a.b.c.d`) and every other
 * IPv6 outside 2000::/3 global unicast is refused, as is Teredo (the embedded address is the
 * relay's, and nothing legitimate serves an App over it).
 */
import ipaddr from 'ipaddr.js';

/** `'public'`, or the name of the range that makes the address unusable for an App. */
export function addressClass(address: string): string {
  // Scoped IPv6 (`fe80::1%eth0`): the zone does not change the range.
  let bare = address.replace(/%.*$/, '');
  if (bare.includes(':')) {
    // The WHATWG serializer writes every IPv6 address in one canonical hex form; ipaddr.js reads
    // a dotted tail (`::127.0.0.1`) as IPv4-mapped, which it is not.
    try {
      bare = new URL(`http://[${bare}]/`).hostname.slice(1, -1);
    } catch {
      return 'invalid';
    }
  }
  if (!ipaddr.isValid(bare)) return 'invalid';
  const ip = ipaddr.parse(bare);
  if (ip.kind() === 'ipv4') {
    const range = (ip as ipaddr.IPv4).range();
    return range === 'unicast' ? 'public' : range;
  }
  const v6 = ip as ipaddr.IPv6;
  const range = v6.range();
  const parts = v6.parts;
  const embedded = (hi: number, lo: number) =>
    new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]).toString();
  const via = (prefix: string, v4: string) => {
    const inner = addressClass(v4);
    return inner === 'public' ? 'public' : `${prefix}:${inner}`;
  };
  switch (range) {
    case 'ipv4Mapped':
    case 'rfc6145':
      return via(range, embedded(parts[6] ?? 0, parts[7] ?? 0));
    case 'rfc6052':
      // 64:ff9b::/96 translates to the embedded IPv4; 64:ff9b:1::/48 is for local use only.
      if (parts[2] === 0 && parts[3] === 0 && parts[4] === 0 && parts[5] === 0)
        return via('nat64', embedded(parts[6] ?? 0, parts[7] ?? 0));
      return 'nat64-local';
    case '6to4':
      return via('6to4', embedded(parts[1] ?? 0, parts[2] ?? 0));
    case 'unicast':
      // ::a.b.c.d (IPv4-compatible, deprecated), ::/8, 100::/8 … are not global unicast.
      return ((parts[0] ?? 0) & 0xe000) === 0x2000 ? 'public' : 'not-global-unicast';
    default:
      return range;
  }
}
