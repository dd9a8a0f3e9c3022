import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/**
 * Red team (round 3): the kernel delivers these public addresses to this very machine, yet a UDP socket connected to
 * them gets another source address, so shared/egress/thisMachine.ts called them public and the gate let a page reach
 * the developer's services on them (it now reads the kernel's local routes, shared/egress/localRoutes.ts):
 * - an IPv6 local route (AnyIP, e.g. a routed /48 on lo for a freebind proxy): source selection picks ::1 or another
 *   of the machine's addresses, never the destination, which no interface holds;
 * - an IPv4 local route with a preferred source (`ip route add local X dev lo src Y`): the source is Y.
 * Same namespace approach as test/security/machineAddress.test.ts.
 */
const scenario = fileURLToPath(new URL('../helpers/machineAddressScenario.ts', import.meta.url));
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

const SETUPS: Record<string, { address: string; setup: string }> = {
  'an IPv6 local route (AnyIP)': {
    address: '2a00:1450:4001::7',
    setup: 'ip -6 route add local 2a00:1450:4001::/48 dev lo',
  },
  'an IPv4 local route with a preferred source': {
    address: '93.184.215.14',
    setup: 'ip route add local "$1/32" dev lo src 127.0.0.1',
  },
};

describe("this machine's public address on a local route", () => {
  it.each(Object.entries(SETUPS))(
    'on %s is refused as this machine',
    async (_, { address, setup }) => {
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
