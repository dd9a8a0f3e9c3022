/**
 * The ports the service itself listens on, on this machine: the local API, the embedded DynamoDB, the local S3 API
 * and the server behind it, the local SQS API, the local renderer's Invoke API, the egress proxy and each capture's
 * route through it (Chromium's DevTools has no port: it speaks over a pipe). A captured page must never reach one of
 * them, whatever ALLOW_PRIVATE_HOSTS says (even '*'): the egress gate refuses any non-public address on these ports.
 *
 * Anything new that listens joins with one call, `ownPorts.add(port)`, as soon as it listens, and leaves with the
 * function that call returns when it closes. The registry is per process: the renderer process,
 * whose egress gate it is, is given the front's ports when it starts (`OWN_PORTS_VARIABLE`) and adds its own, and
 * tells the front of each of its own as it opens and closes (`watch`), since the front's gate sends webhooks.
 */
class OwnPorts {
  /** A port may be added twice (two services in one test process): counted, so one leaving keeps the other's. */
  private readonly counts = new Map<number, number>();
  private readonly watchers = new Set<PortWatcher>();

  add(port: number): () => void {
    this.counts.set(port, (this.counts.get(port) ?? 0) + 1);
    const told = [...this.watchers];
    for (const watcher of told) watcher(port, true);
    let removed = false;
    return () => {
      if (removed) return;
      removed = true;
      const left = (this.counts.get(port) ?? 1) - 1;
      if (left > 0) this.counts.set(port, left);
      else this.counts.delete(port);
      for (const watcher of told) watcher(port, false);
    };
  }

  /**
   * Calls `watcher` at each `add` from now on, and as what that added leaves (a port added twice, twice): the
   * renderer process tells the front of the ports it opens after it started (each capture's egress route), whose
   * egress gate then refuses them too.
   */
  watch(watcher: PortWatcher): void {
    this.watchers.add(watcher);
  }

  has(port: number): boolean {
    return this.counts.has(port);
  }

  /** Every port refused now (diagnostics and tests). */
  list(): number[] {
    return [...this.counts.keys()];
  }
}

type PortWatcher = (port: number, listening: boolean) => void;

/** The one registry of the process. */
export const ownPorts = new OwnPorts();

/** How a process that starts the renderer process hands it the ports of its own: comma-separated numbers. */
export const OWN_PORTS_VARIABLE = 'SERVICE_OWN_PORTS';

/** Adds the ports another process handed over in `OWN_PORTS_VARIABLE`; anything that is not a port is ignored. */
export function adoptOwnPorts(value: string | undefined): void {
  for (const port of (value ?? '').split(',').map(Number)) {
    if (Number.isInteger(port) && port > 0 && port < 65_536) ownPorts.add(port);
  }
}
