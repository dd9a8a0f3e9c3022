import { createSocket } from 'node:dgram';
import { isIP } from 'node:net';
import { canonicalAddress } from './addressClass';

/**
 * Whether the kernel would deliver `address` to this very machine, asked of the kernel itself: a UDP socket connected
 * to it (which sends nothing) gets the address as its own source exactly when the route to it is local. That covers
 * what a list of interfaces misses (red team): an address on an interface without carrier or down, and a local route
 * of no interface's (AnyIP). An address with no route at all is not this machine's.
 */
export function isThisMachine(address: string): Promise<boolean> {
  const family = isIP(address);
  if (family === 0) return Promise.resolve(false);
  return new Promise((resolve) => {
    const socket = createSocket(family === 6 ? 'udp6' : 'udp4');
    const done = (local: boolean) => {
      socket.close();
      resolve(local);
    };
    socket.on('error', () => done(false));
    socket.connect(9, address, () => {
      try {
        done(canonicalAddress(socket.address().address) === canonicalAddress(address));
      } catch {
        done(false);
      }
    });
  });
}
