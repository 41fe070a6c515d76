import { describe, expect, it } from 'vitest';
import { addressClass } from './address-policy.ts';

/** A tenant's App must be public unicast: anything else is refused. */
const isNonPublicAddress = (address: string) => addressClass(address) !== 'public';

describe('App address classification', () => {
  const blocked: Array<[string, string]> = [
    // IPv4 special ranges
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['100.127.255.255', 'carrierGradeNat'],
    ['169.254.169.254', 'linkLocal'],
    ['169.254.0.1', 'linkLocal'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.0.1', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['198.19.255.1', 'reserved'],
    ['198.51.100.7', 'reserved'],
    ['203.0.113.9', 'reserved'],
    ['192.88.99.1', 'reserved'],
    // inet_aton spellings (getaddrinfo accepts them): classified as the address they mean
    ['2130706433', 'loopback'],
    ['0x7f.1', 'loopback'],
    ['017700000001', 'loopback'],
    ['0x7f000001', 'loopback'],
    ['127.1', 'loopback'],
    // IPv6 special ranges
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['fc00::1', 'uniqueLocal'],
    ['fd00:ec2::254', 'uniqueLocal'],
    ['fe80::1', 'linkLocal'],
    ['fe80::1%eth0', 'linkLocal'],
    ['febf::1', 'linkLocal'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['3fff::1', 'reserved'],
    ['2001:2::1', 'benchmarking'],
    ['fec0::1', 'deprecatedSiteLocal'],
    ['100::1', 'discard'],
    ['4000::1', 'not-global-unicast'],
    // IPv4 inside IPv6: mapped (both spellings), SIIT, IPv4-compatible, NAT64, 6to4, Teredo
    ['::ffff:127.0.0.1', 'ipv4Mapped:loopback'],
    ['::ffff:7f00:1', 'ipv4Mapped:loopback'],
    ['::FFFF:7F00:0001', 'ipv4Mapped:loopback'],
    ['0:0:0:0:0:ffff:7f00:1', 'ipv4Mapped:loopback'],
    ['::ffff:10.1.2.3', 'ipv4Mapped:private'],
    ['::ffff:a9fe:a9fe', 'ipv4Mapped:linkLocal'],
    ['::ffff:169.254.169.254', 'ipv4Mapped:linkLocal'],
    ['::ffff:0.0.0.0', 'ipv4Mapped:unspecified'],
    ['::ffff:0:127.0.0.1', 'rfc6145:loopback'],
    ['::127.0.0.1', 'not-global-unicast'],
    ['::7f00:1', 'not-global-unicast'],
    ['::10.0.0.1', 'not-global-unicast'],
    ['::8.8.8.8', 'not-global-unicast'],
    ['64:ff9b::127.0.0.1', 'nat64:loopback'],
    ['64:ff9b::a9fe:a9fe', 'nat64:linkLocal'],
    ['64:ff9b::10.0.0.1', 'nat64:private'],
    ['64:ff9b:1::8.8.8.8', 'nat64-local'],
    ['2002:7f00:1::1', '6to4:loopback'],
    ['2002:a00:1::1', '6to4:private'],
    ['2002:a9fe:a9fe::1', '6to4:linkLocal'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo'],
    // not addresses at all
    ['localhost', 'invalid'],
    ['', 'invalid'],
    ['127.0.0.1.', 'invalid'],
  ];
  it.each(blocked)('%s is %s, not public', (address, range) => {
    expect(addressClass(address)).toBe(range);
    expect(isNonPublicAddress(address)).toBe(true);
  });

  const open = [
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '172.15.255.255',
    '100.128.0.1',
    '100.63.255.255',
    '169.253.255.255',
    '2606:4700::1111',
    '2a00:1450:4001::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ];
  it.each(open)('%s is public', (address) => {
    expect(addressClass(address)).toBe('public');
    expect(isNonPublicAddress(address)).toBe(false);
  });
});
