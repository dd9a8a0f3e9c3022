import { createSocket } from 'node:dgram';
import { isIP } from 'node:net';
import { canonicalAddress } from './addressClass';
import { inLocalRoute } from './localRoutes';

/**
 * Whether the kernel would deliver `address` to this very machine: it lies in one of the kernel's local routes
 * (localRoutes.ts: whatever source address the route prefers, IPv6 AnyIP included), or, where those tables cannot be
 * read, a UDP socket connected to it (which sends nothing) gets it as its own source. Both see what a list of
 * interfaces misses (red team): an address on an interface without carrier or down, and local routes of no
 * interface's. An address with no route at all is not this machine's.
 */
export async function isThisMachine(address: string): Promise<boolean> {
  // The tables answer for every kind of local route; the socket, a call more per address, only where they are missing.
  return (await inLocalRoute(address)) ?? (await isOwnSource(address));
}

/** Whether a UDP socket connected to `address` gets it as its own source: the kernel routes it locally. */
export function isOwnSource(address: string): Promise<boolean> {
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
