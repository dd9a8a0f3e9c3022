import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
/** A full garbage collection, on demand. */
export const collectGarbage = runInNewContext('gc') as () => void;

/** The bytes of ArrayBuffers (Buffers among them) the process still holds after a full garbage collection. */
export function heldBytes(): number {
  collectGarbage();
  return process.memoryUsage().arrayBuffers;
}
