import { loadConfig } from '../../src/config.js';
import { DestinationPolicy } from '../../src/webhooks/destination-policy.js';
import { configRefusal } from './config-refusal.js';

/**
 * Where webhooks may be sent (CAIRN_WEBHOOK_ALLOWED_HOSTS; README "Destinations", the comment of
 * destination-policy.ts). `external` (the default): no loopback, private, link-local, CGNAT,
 * multicast or reserved addresses, including 169.254.169.254, nor IPv6 forms that embed an IPv4
 * address (IPv4-compatible, IPv4-translated ::ffff:0:0/96, NAT64 64:ff9b::/96, 6to4 2002::/16);
 * only `*` allows a translated address. IPv4-mapped addresses are judged as the IPv4 address
 * they are.
 */
const external = new DestinationPolicy(['external']);
const HOST = 'hooks.example.com';

describe('the default policy, external', () => {
  test.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '172.15.255.255', // just below 172.16.0.0/12
    '172.32.0.0', // just above it
    '100.63.255.255', // just below CGNAT 100.64.0.0/10
    '100.128.0.0', // just above it
    '169.253.255.255',
    '192.167.255.255',
    '223.255.255.255', // the last unicast address below multicast
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
  ])('allows the public address %s', (address) => {
    expect(external.allows(HOST, address)).toBe(true);
  });

  test.each([
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', '"this network"'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.0', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local (cloud metadata)'],
    ['169.254.0.1', 'link-local'],
    ['100.64.0.1', 'CGNAT'],
    ['100.127.255.255', 'CGNAT'],
    ['192.0.0.8', 'IETF protocol assignments'],
    ['192.0.2.1', 'TEST-NET-1'],
    ['198.51.100.7', 'TEST-NET-2'],
    ['203.0.113.9', 'TEST-NET-3'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['192.88.99.1', '6to4 relay anycast'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local with a zone'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['fec0::1', 'site-local'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['2001::1', 'Teredo'],
    ['100::1', 'discard-only'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::FFFF:127.0.0.1', 'IPv4-mapped loopback, upper case'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback in hex'],
    ['0:0:0:0:0:ffff:a9fe:a9fe', 'IPv4-mapped metadata address, written out'],
    ['::ffff:10.0.0.1', 'IPv4-mapped private'],
    ['::127.0.0.1', 'IPv4-compatible loopback'],
    ['::8.8.8.8', 'IPv4-compatible, even of a public address'],
    ['::ffff:0:7f00:1', 'IPv4-translated'],
    ['::ffff:0:8.8.8.8', 'IPv4-translated, even of a public address'],
    ['0:0:0:0:ffff:0:a00:1', 'IPv4-translated, written out'],
    ['64:ff9b::a9fe:a9fe', 'NAT64 of the metadata address'],
    ['64:ff9b::808:808', 'NAT64, even of a public address'],
    ['64:ff9b:1::1', 'local-use NAT64'],
    ['2002:7f00:1::', '6to4 of loopback'],
    ['2002:808:808::1', '6to4, even of a public address'],
  ])('refuses %s (%s)', (address) => {
    expect(external.allows(HOST, address)).toBe(false);
  });

  test('what is not an IP address is refused', () => {
    for (const address of ['', 'localhost', 'hooks.example.com', '0127.0.0.1', '256.1.1.1', '1.2.3', '::ffff:999.0.0.1']) {
      expect(external.allows(HOST, address)).toBe(false);
    }
  });
});

describe('other rules', () => {
  test('loopback allows 127.0.0.0/8 and ::1 (and mapped loopback), nothing else', () => {
    const policy = new DestinationPolicy(['loopback']);
    for (const address of ['127.0.0.1', '127.9.9.9', '::1', '::ffff:127.0.0.1', '::ffff:7f00:1']) {
      expect(policy.allows('localhost', address)).toBe(true);
    }
    for (const address of ['8.8.8.8', '10.0.0.1', '::2', '::127.0.0.1', '::ffff:0:7f00:1', '64:ff9b::7f00:1']) {
      expect(policy.allows('localhost', address)).toBe(false);
    }
  });

  test('private allows RFC 1918 and unique-local addresses, not loopback, link-local or CGNAT', () => {
    const policy = new DestinationPolicy(['private']);
    for (const address of ['10.1.2.3', '172.16.0.1', '172.31.0.1', '192.168.0.1', 'fd00::1', 'fc00::1', '::ffff:192.168.0.1']) {
      expect(policy.allows(HOST, address)).toBe(true);
    }
    for (const address of ['127.0.0.1', '169.254.169.254', '100.64.0.1', '172.32.0.1', '8.8.8.8', 'fe80::1', '::1']) {
      expect(policy.allows(HOST, address)).toBe(false);
    }
  });

  test('rules combine: any one of them allows', () => {
    const policy = new DestinationPolicy(['external', 'loopback']);
    expect(policy.allows(HOST, '8.8.8.8')).toBe(true);
    expect(policy.allows(HOST, '127.0.0.1')).toBe(true);
    expect(policy.allows(HOST, '10.0.0.1')).toBe(false);
  });

  test('a CIDR allows exactly its range, IPv4 or IPv6', () => {
    const v4 = new DestinationPolicy(['10.1.0.0/16']);
    expect(v4.allows(HOST, '10.1.0.0')).toBe(true);
    expect(v4.allows(HOST, '10.1.255.255')).toBe(true);
    expect(v4.allows(HOST, '::ffff:10.1.2.3')).toBe(true); // mapped: judged as the IPv4 address
    expect(v4.allows(HOST, '10.2.0.0')).toBe(false);
    expect(v4.allows(HOST, '10.0.255.255')).toBe(false);
    expect(v4.allows(HOST, '8.8.8.8')).toBe(false);

    const v6 = new DestinationPolicy(['fd00::/8']);
    expect(v6.allows(HOST, 'fd00::1')).toBe(true);
    expect(v6.allows(HOST, 'fdff:ffff::1')).toBe(true);
    expect(v6.allows(HOST, 'fc00::1')).toBe(false);
    expect(v6.allows(HOST, '10.0.0.1')).toBe(false);
  });

  test('a host glob allows that name whatever it resolves to, and only that name', () => {
    const exact = new DestinationPolicy(['hooks.internal.example']);
    expect(exact.allows('hooks.internal.example', '10.0.0.7')).toBe(true);
    expect(exact.allows('HOOKS.Internal.Example', '127.0.0.1')).toBe(true);
    expect(exact.allows('hooksXinternal.example', '10.0.0.7')).toBe(false); // the dots are literal
    expect(exact.allows('a.hooks.internal.example', '10.0.0.7')).toBe(false);
    expect(exact.allows('hooks.internal.example.evil.com', '10.0.0.7')).toBe(false);
  });

  test('a wildcard glob matches one or more labels below its suffix, not the suffix alone', () => {
    const policy = new DestinationPolicy(['*.internal.example']);
    expect(policy.allows('ci.internal.example', '10.0.0.7')).toBe(true);
    expect(policy.allows('a.b-c.internal.example', '10.0.0.7')).toBe(true);
    expect(policy.allows('internal.example', '10.0.0.7')).toBe(false);
    expect(policy.allows('evilinternal.example', '10.0.0.7')).toBe(false);
    expect(policy.allows('ci.internal.example.attacker.net', '10.0.0.7')).toBe(false);
    expect(policy.allows('ci_x.internal.example', '10.0.0.7')).toBe(false);
  });

  test('* allows anything, including translated addresses', () => {
    const policy = new DestinationPolicy(['*']);
    for (const address of ['127.0.0.1', '::1', '169.254.169.254', '::ffff:0:7f00:1', '64:ff9b::7f00:1', '8.8.8.8']) {
      expect(policy.allows(HOST, address)).toBe(true);
    }
  });

  test('only * allows an IPv4-translated address: not a CIDR covering everything, nor a host glob', () => {
    for (const spec of [['::/0'], ['0.0.0.0/0'], ['external', 'private', 'loopback'], [HOST], ['*.example.com']]) {
      const policy = new DestinationPolicy(spec);
      expect(policy.allows(HOST, '::ffff:0:7f00:1')).toBe(false);
      expect(policy.allows(HOST, '::ffff:0:8.8.8.8')).toBe(false);
    }
  });
});

describe('DestinationPolicy.literalAddress', () => {
  test.each([
    ['http://127.0.0.1/x', '127.0.0.1'],
    ['https://[::1]:8443/x', '::1'],
    ['http://[::ffff:127.0.0.1]/x', '::ffff:7f00:1'], // the URL parser writes mapped addresses in hex
    ['http://2130706433/x', '127.0.0.1'], // the URL parser's reading of a decimal host
    ['http://0x7f.0.0.1/x', '127.0.0.1'],
    ['http://hooks.example.com/x', null],
    ['http://localhost:8080/x', null],
  ])('%s → %s', (url, address) => {
    expect(DestinationPolicy.literalAddress(new URL(url))).toBe(address);
  });

  test('every literal form of a forbidden address is refused by the default policy', () => {
    for (const url of ['http://2130706433/x', 'http://0x7f.0.0.1/x', 'http://[::ffff:127.0.0.1]/x', 'http://[::ffff:0:127.0.0.1]/x']) {
      const address = DestinationPolicy.literalAddress(new URL(url));
      expect(address).not.toBeNull();
      expect(external.allows(new URL(url).hostname, address!)).toBe(false);
    }
  });
});

describe('CAIRN_WEBHOOK_ALLOWED_HOSTS', () => {
  const hosts = (value?: string) => loadConfig(value === undefined ? {} : { CAIRN_WEBHOOK_ALLOWED_HOSTS: value }).webhookAllowedHosts;
  const refusal = (value: string) => configRefusal({ CAIRN_WEBHOOK_ALLOWED_HOSTS: value });

  test('defaults to external', () => {
    expect(hosts()).toEqual(['external']);
    expect(hosts('  ')).toEqual(['external']);
  });

  test('a comma list; spaces and empty entries are dropped', () => {
    expect(hosts(' loopback , 10.0.0.0/8,,*.example.com , fd00::/8,*')).toEqual([
      'loopback',
      '10.0.0.0/8',
      '*.example.com',
      'fd00::/8',
      '*',
    ]);
  });

  test('a list of nothing but commas names no rule and is refused', () => {
    expect(refusal(',')).toMatchObject({ name: 'ConfigError', variable: 'CAIRN_WEBHOOK_ALLOWED_HOSTS' });
    expect(refusal(' , ,')).toMatchObject({ name: 'ConfigError', variable: 'CAIRN_WEBHOOK_ALLOWED_HOSTS' });
  });

  test.each([
    '10.0.0.0/33',
    '::/129',
    '300.0.0.0/8',
    'example.com/24',
    'hooks example.com',
    'http://hooks.example.com',
    'hooks.example.com:8080',
    'host_name',
  ])('%j is not a rule', (value) => {
    expect(refusal(value)).toMatchObject({ name: 'ConfigError', variable: 'CAIRN_WEBHOOK_ALLOWED_HOSTS' });
  });

  test('prefix lengths up to the family width are accepted', () => {
    expect(hosts('10.0.0.1/32,::1/128,0.0.0.0/0')).toEqual(['10.0.0.1/32', '::1/128', '0.0.0.0/0']);
  });

  test('every rule the configuration accepts builds a policy that judges as documented', () => {
    const policy = new DestinationPolicy(hosts('loopback,10.0.0.0/8,*.example.com'));
    expect(policy.allows('x', '127.0.0.1')).toBe(true);
    expect(policy.allows('x', '10.9.9.9')).toBe(true);
    expect(policy.allows('ci.example.com', '192.168.0.1')).toBe(true);
    expect(policy.allows('x', '192.168.0.1')).toBe(false);
    expect(policy.allows('x', '8.8.8.8')).toBe(false); // external is not implied once a list is given
  });
});
