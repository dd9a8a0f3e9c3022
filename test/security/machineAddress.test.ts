import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/**
 * A public address of this very machine is refused as "this machine": a page naming it (or a name resolving to it)
 * would reach the developer's services listening on 0.0.0.0. Red team: the gate first read the machine's addresses
 * from Node's networkInterfaces(), which lists only interfaces up AND running; an address on an interface without
 * carrier (a cable unplugged, a veth with nothing attached, a VPN down), on one that is down, or on a local route of
 * no interface's (AnyIP) is still this machine's to Linux. The kernel is now asked (shared/egress/thisMachine.ts,
 * with its local routes read as well: shared/egress/localRoutes.ts).
 * Run in a user and network namespace of its own (unshare, ip), as test/security/slowDns.test.ts.
 */
const PUBLIC_ADDRESS = '93.184.215.14';
const scenario = fileURLToPath(new URL('../helpers/machineAddressScenario.ts', import.meta.url));
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

/**
 * How the address is this machine's: on a running interface, one up without carrier, one down (kube-ipvs0 keeps its
 * service addresses so), a local route (AnyIP); and, found in round 3, an IPv6 local route and an IPv4 local route
 * that prefers another source (a UDP socket connected to them gets another address as its source).
 */
const SETUPS: Record<string, { address?: string; setup: string }> = {
  'an interface up and running': {
    setup:
      'ip link add v0 type veth peer name v1 && ip addr add "$1/32" dev v0 && ip link set v1 up && ip link set v0 up',
  },
  'an interface up without carrier': {
    setup: 'ip link add v0 type veth peer name v1 && ip addr add "$1/32" dev v0 && ip link set v0 up',
  },
  'an interface that is down': {
    setup: 'ip link add v0 type veth peer name v1 && ip addr add "$1/32" dev v0',
  },
  'a local route (AnyIP)': { setup: 'ip route add local "$1/32" dev lo' },
  'an IPv6 local route (AnyIP)': {
    address: '2a00:1450:4001::7',
    setup: 'ip -6 route add local 2a00:1450:4001::/48 dev lo',
  },
  'an IPv4 local route with a preferred source': { setup: 'ip route add local "$1/32" dev lo src 127.0.0.1' },
};

describe("this machine's public address", () => {
  it.each(Object.entries(SETUPS))(
    'on %s is refused as this machine, though Linux delivers it locally',
    async (_, { address = PUBLIC_ADDRESS, setup }) => {
      const { stdout } = await promisify(execFile)(
        'unshare',
        [
          '--user',
          '--map-root-user',
          '--net',
          'sh',
          '-c',
          `ip link set lo up && ${setup} && exec "$2" --import "$3" "$4" "$1"`,
          'sh',
          address,
          process.execPath,
          tsx,
          scenario,
        ],
        { timeout: 60_000 },
      );
      const outcome = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}');
      // The precondition: the address is this machine's (the developer's service answers on it).
      expect(outcome.answered).toBe('developer-service');
      expect(outcome.verdict).toMatchObject({ kind: 'refused' });
    },
    90_000,
  );
});
