import { describe, expect, it } from 'vitest';
import { createEgressGate } from '../../shared/egress/egressGate';
import { ipv4LocalPrefixes, ipv6LocalPrefixes } from '../../shared/egress/localRoutes';
import { isOwnSource, isThisMachine } from '../../shared/egress/thisMachine';
import { createUrlPolicy } from '../../shared/egress/urlPolicy';
import { ValidationError } from '../../shared/errors';
import { scriptedLookup } from '../helpers/egressFixtures';

/** DNS for these tests: a few scripted names; everything else fails like NXDOMAIN (no real DNS is ever asked). */
const dns = () =>
  scriptedLookup({
    'public.example': [['93.184.215.14']],
    'public6.example': [['2606:4700:4700::1111']],
    'internal.example': [['10.0.0.7']],
    'metadata.example': [['169.254.169.254']],
    'mixed.example': [['93.184.215.14', '127.0.0.1']],
    'mapped.example': [['::ffff:127.0.0.1']],
    'dev.example': [['127.0.0.1']],
  });

async function refusal(policyInput: { allowPrivateHosts: string }, url: string): Promise<ValidationError> {
  const policy = createUrlPolicy({ ...policyInput, lookup: dns().lookup });
  const error = await policy.assertAllowed(url).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof ValidationError))
    throw new Error(`expected ${url} to be refused, got ${String(error)}`);
  return error;
}

async function passes(policyInput: { allowPrivateHosts: string }, url: string): Promise<void> {
  const policy = createUrlPolicy({ ...policyInput, lookup: dns().lookup });
  await expect(policy.assertAllowed(url)).resolves.toBeUndefined();
}

const strict = { allowPrivateHosts: '' };

describe('createUrlPolicy with no private hosts allowed', () => {
  it.each([
    ['http://127.0.0.1/', 'loopback'],
    ['http://127.0.0.1:9001/2018-06-01/runtime/invocation/next', 'the Lambda runtime API'],
    ['http://0.0.0.0/', 'the unspecified address'],
    ['http://0/', 'zero, which the URL parser reads as 0.0.0.0'],
    ['http://169.254.169.254/latest/meta-data/', 'the metadata service'],
    ['http://10.0.0.1/', '10/8'],
    ['http://172.16.0.1/', '172.16/12'],
    ['http://172.31.255.255/', 'the top of 172.16/12'],
    ['http://192.168.0.1/', '192.168/16'],
    ['http://100.64.0.1/', 'carrier-grade NAT'],
    ['http://[fc00::1]/', 'unique-local fc00::/7'],
    ['http://[fd00::1]/', 'unique-local fd00::/8'],
    ['http://[fe80::1]/', 'IPv6 link-local'],
    ['http://[::1]/', 'IPv6 loopback'],
    ['http://[::]/', 'the IPv6 unspecified address'],
    ['http://[::ffff:127.0.0.1]/', 'IPv4-mapped loopback'],
    ['http://[::ffff:a9fe:a9fe]/', 'IPv4-mapped metadata in hex'],
    ['http://[64:ff9b::127.0.0.1]/', 'NAT64 of loopback'],
    ['http://[2002:7f00:1::]/', '6to4 of loopback'],
    ['http://2130706433/', 'decimal 2130706433'],
    ['http://0x7f000001/', 'hex 0x7f000001'],
    ['http://0177.0.0.1/', 'octal 0177.0.0.1'],
    ['http://127.1/', 'short 127.1'],
    ['http://0x7f.1/', 'mixed hex short form'],
    ['http://127.0.0.1./', 'a trailing dot'],
    ['http://%31%32%37.0.0.1/', 'percent-encoded digits'],
    ['http://localhost/', 'localhost'],
    ['http://LOCALHOST./', 'localhost in capitals with a trailing dot'],
    ['http://app.localhost/', 'a *.localhost name'],
    ['https://127.0.0.1/', 'loopback over https'],
    ['http://user:pass@127.0.0.1:8080/', 'loopback with credentials and a port'],
    ['http://224.0.0.1/', 'multicast'],
    ['http://255.255.255.255/', 'broadcast'],
    ['http://198.18.0.1/', 'benchmarking'],
    ['http://192.0.2.1/', 'documentation'],
    ['http://240.0.0.1/', 'reserved'],
    ['http://internal.example/', 'a name that resolves to 10/8'],
    ['http://metadata.example/', 'a name that resolves to the metadata address'],
    ['http://mixed.example/', 'a name with one public and one loopback address'],
    ['http://mapped.example/', 'a name that resolves to IPv4-mapped loopback'],
  ])('refuses %s (%s) with url_not_allowed', async (url) => {
    const error = await refusal(strict, url);
    expect(error.status).toBe(400);
    expect(error.details).toHaveLength(1);
    expect(error.details[0]).toMatchObject({ code: 'url_not_allowed', path: ['url'] });
  });

  it('says which address was refused', async () => {
    const error = await refusal(strict, 'http://2130706433/');
    expect(error.details[0]?.message).toContain('127.0.0.1');
    expect(error.details[0]?.message).toMatch(/private or reserved/);
  });

  it.each([
    'file:///etc/passwd',
    'ftp://93.184.215.14/',
    'javascript:alert(1)',
    'data:text/html,hi',
    'not a url',
  ])('refuses %s, which is not an http(s) URL', async (url) => {
    const error = await refusal(strict, url);
    expect(error.details[0]?.code).toBe('url_not_allowed');
  });

  it.each([
    'http://93.184.215.14/',
    'https://public.example/path?q=1',
    'http://public6.example:8080/',
    'http://[2606:4700::1]/',
  ])('allows %s, which is public', async (url) => {
    await passes(strict, url);
  });

  it('lets a name that does not resolve through, so the capture fails on it instead', async () => {
    await passes(strict, 'http://nxdomain.example/');
  });

  it('resolves the name with every address, not just the first', async () => {
    const { lookup, calls } = dns();
    const policy = createUrlPolicy({ allowPrivateHosts: '', lookup });
    await expect(policy.assertAllowed('http://mixed.example/')).rejects.toBeInstanceOf(ValidationError);
    expect(calls).toEqual(['mixed.example']);
  });

  it('does not look up IP literals', async () => {
    const { lookup, calls } = dns();
    await createUrlPolicy({ allowPrivateHosts: '', lookup }).assertAllowed('http://93.184.215.14/');
    expect(calls).toEqual([]);
  });
});

describe('createUrlPolicy with ALLOW_PRIVATE_HOSTS', () => {
  it("allows every private address with '*'", async () => {
    await passes({ allowPrivateHosts: '*' }, 'http://127.0.0.1:4567/');
    await passes({ allowPrivateHosts: '*' }, 'http://localhost:5173/');
    await passes({ allowPrivateHosts: '*' }, 'http://169.254.169.254/');
  });

  it('allows exactly the listed host and port', async () => {
    await passes({ allowPrivateHosts: '127.0.0.1:4567' }, 'http://127.0.0.1:4567/page');
  });

  it('refuses the listed host on another port', async () => {
    await refusal({ allowPrivateHosts: '127.0.0.1:4567' }, 'http://127.0.0.1:4568/');
  });

  it('refuses the listed host on its default port when the entry names another', async () => {
    await refusal({ allowPrivateHosts: '127.0.0.1:4567' }, 'http://127.0.0.1/');
  });

  it('refuses every other private address', async () => {
    await refusal({ allowPrivateHosts: '127.0.0.1:4567' }, 'http://169.254.169.254:4567/');
    await refusal({ allowPrivateHosts: '127.0.0.1:4567' }, 'http://127.0.0.2:4567/');
  });

  it('matches numeric host forms of a listed address, since they are the same destination', async () => {
    await passes({ allowPrivateHosts: '127.0.0.1:4567' }, 'http://2130706433:4567/');
    await passes({ allowPrivateHosts: '127.0.0.1:4567' }, 'http://[::ffff:127.0.0.1]:4567/');
  });

  it('matches a name that resolves to a listed address on the listed port', async () => {
    await passes({ allowPrivateHosts: '127.0.0.1:4567' }, 'http://dev.example:4567/');
  });

  it('allows a listed name and still refuses the same name on another port', async () => {
    await passes({ allowPrivateHosts: 'localhost:5173' }, 'http://localhost:5173/');
    await refusal({ allowPrivateHosts: 'localhost:5173' }, 'http://localhost:5174/');
  });

  it('reads several comma-separated entries, with spaces', async () => {
    const list = { allowPrivateHosts: '127.0.0.1:4567, localhost:5173 ,[::1]:8080' };
    await passes(list, 'http://127.0.0.1:4567/');
    await passes(list, 'http://localhost:5173/');
    await passes(list, 'http://[::1]:8080/');
    await refusal(list, 'http://[::1]:8081/');
  });

  it('treats an entry on port 80 as the default http port', async () => {
    await passes({ allowPrivateHosts: '127.0.0.1:80' }, 'http://127.0.0.1/');
  });

  it('rejects an entry without a port at start-up', () => {
    expect(() => createUrlPolicy({ allowPrivateHosts: '127.0.0.1' })).toThrow(/host:port/);
  });
});

describe("this machine's own public address", () => {
  // Red team: on a machine with a public address (IPv6 often), `npm start` counted that address as public, so a page
  // could reach the developer's other services listening on every interface. The kernel is asked (thisMachine.ts);
  // test/security/machineAddress.test.ts proves it in a network namespace of its own.
  const gate = (allowPrivateHosts = '') =>
    createEgressGate({
      allowPrivateHosts,
      lookup: dns().lookup,
      thisMachine: async (address) => ['93.184.215.14', '2606:4700:4700::1111'].includes(address),
    });

  it('is refused as this machine, by address and by a name that resolves to it, IPv4 and IPv6', async () => {
    for (const [host, port] of [
      ['93.184.215.14', 8080],
      ['public.example', 443],
      ['public6.example', 443],
      ['[2606:4700:4700::1111]', 80],
    ] as const) {
      const verdict = await gate().check(host, port);
      expect(verdict, host).toMatchObject({ kind: 'refused', allowable: true });
      expect(verdict.kind === 'refused' && verdict.reason, host).toContain('this machine');
    }
  });

  it('is refused as this machine in the IPv6 forms a NAT64 or 6to4 relay delivers to it', async () => {
    // 93.184.215.14 is 5db8:d70e in hextets.
    for (const host of ['[64:ff9b::5db8:d70e]', '[2002:5db8:d70e::1]']) {
      const verdict = await gate().check(host, 443);
      expect(verdict.kind === 'refused' && verdict.reason, host).toContain('this machine');
    }
    expect(await gate().check('[64:ff9b::101:101]', 443)).toMatchObject({ kind: 'allowed' });
  });

  it('is reached only where ALLOW_PRIVATE_HOSTS names it, and other public addresses stay public', async () => {
    expect(await gate('93.184.215.14:8080').check('93.184.215.14', 8080)).toMatchObject({ kind: 'allowed' });
    expect(await gate().check('1.1.1.1', 443)).toMatchObject({ kind: 'allowed' });
  });

  it('is asked of the kernel by default: a loopback-routed public address is this machine, others are not', async () => {
    // 127.0.0.1 is this machine's by the same rule; a public address with a route elsewhere (or none) is not.
    expect(await isThisMachine('127.0.0.1')).toBe(true);
    expect(await isThisMachine('93.184.215.14')).toBe(false);
    expect(await isThisMachine('not an address')).toBe(false);
    // Where the kernel's tables cannot be read (not Linux), the socket's source answers.
    expect(await isOwnSource('127.0.0.1')).toBe(true);
    expect(await isOwnSource('93.184.215.14')).toBe(false);
  });
});

describe("the kernel's local routes, as /proc shows them", () => {
  it('reads local IPv4 prefixes from the trie and local IPv6 routes by their flag, nothing else', () => {
    const trie = [
      'Local:',
      '  +-- 64.0.0.0/2 2 0 2',
      '     |-- 93.184.215.14',
      '        /32 host LOCAL',
      '     |-- 127.255.255.255',
      '        /32 link BROADCAST',
      '     |-- 10.9.0.0',
      '        /24 host LOCAL',
    ].join('\n');
    expect(ipv4LocalPrefixes(trie).map(([address, bits]) => `${address}/${bits}`)).toEqual([
      '93.184.215.14/32',
      '10.9.0.0/24',
    ]);
    const routes = [
      '2a001450400100000000000000000000 30 00000000000000000000000000000000 00 00000000000000000000000000000000 00000400 00000001 00000000 80000001       lo',
      '20010db8000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000400 00000001 00000000 00000001     eth0',
    ].join('\n');
    expect(ipv6LocalPrefixes(routes).map(([address, bits]) => `${address.toString()}/${bits}`)).toEqual([
      '2a00:1450:4001::/48',
    ]);
  });
});
