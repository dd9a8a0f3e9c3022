import { closeSync, fstatSync, readdirSync } from 'node:fs';
import { z } from 'zod';
import { adoptOwnPorts, OWN_PORTS_VARIABLE, ownPorts } from '../../shared/egress/ownPorts';
import { logger } from '../../shared/logger';
import { SCREENSHOT_FUNCTION_TIMEOUT_MS } from '../../shared/timing';
import { createRendererFunction } from '../../shared/wiring/renderer';
import { invokeCredentials, startInvokeServer } from './invokeServer';
import {
  BUDGETS_VARIABLE,
  LOCAL_RENDERER_FUNCTION,
  type PortMessage,
  type ReadyMessage,
  type StartMessage,
} from './localRenderer';

/*
 * The local renderer process: the renderer function's code behind a local Lambda Invoke API. Started by the front
 * (local/renderer/localRenderer.ts) with an environment built from an allow-list, so it holds none of the service's
 * data, keys or credentials. It reports its endpoint and the ports it listens on (then each port it opens or closes)
 * over the IPC channel and exits when that channel closes.
 */
closeInheritedFiles();
const budgetsSchema = z.object({
  navigationMs: z.number().int().min(1),
  afterLoadMs: z.number().int().min(1),
});
const send = process.send?.bind(process);
if (!send) throw new Error('The renderer process is started by the local front, with an IPC channel');

// The secret the front signs its invocations with, which it sends first, over the IPC channel.
const start = await new Promise<StartMessage>((resolve) => process.once('message', resolve));
const credentials = invokeCredentials(Buffer.from(start.invokeSecret, 'base64'));
const budgetsJson = process.env[BUDGETS_VARIABLE];
const budgets = budgetsJson ? budgetsSchema.parse(JSON.parse(budgetsJson)) : undefined;
// The front's ports, and this process's own Invoke API: none of them is for pages.
adoptOwnPorts(process.env[OWN_PORTS_VARIABLE]);
const renderer = createRendererFunction(process.env, budgets);
const server = await startInvokeServer(
  { [LOCAL_RENDERER_FUNCTION]: renderer.handler },
  SCREENSHOT_FUNCTION_TIMEOUT_MS,
  credentials,
);
const invokePort = Number(new URL(server.url).port);
ownPorts.add(invokePort);
// The egress proxy listens before the front is told the process is ready, so the front refuses its port from the
// first request on (a webhook or a capture's url aimed at it), as it refuses its own.
const proxyPort = Number(new URL((await renderer.egress()).url).port);
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await server.close();
  await renderer.close();
  process.exit(0);
};
// `on`, not `once`: a process group's SIGTERM came first and the front's own SIGTERM a moment later, which then took
// the default action and killed this process before Chromium's temp folder and profile were removed (red team,
// round 23). `stop` runs once whatever comes.
process.once('disconnect', stop);
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
// Each capture's egress route listens on a port of its own, opened later: the front is told of it as it opens and
// closes, so that the front's egress gate, which sends webhooks, refuses it too (red team, round 20).
ownPorts.watch((port, listening) => {
  if (process.connected) send({ ownPort: port, listening } satisfies PortMessage);
});
send({ ready: server.url, ownPorts: [invokePort, proxyPort] } satisfies ReadyMessage);
// As the deployed function does in its init phase; captures that come first wait for the same launch.
renderer.renderer.warmUp().catch((error) => logger.error('Browser warm-up failed', { error }));

/**
 * Closes the regular files this process inherited from the front: native libraries of the front open theirs without
 * close-on-exec (dynalite's LevelDB: the table's log, lock and manifest under DATA_DIR, some writable), and a spawn
 * keeps every such descriptor, in this process and in the Chromium it launches (red team, round 21). Nothing of this
 * process has a file open yet; pipes, sockets and the IPC channel are not regular files.
 */
function closeInheritedFiles(): void {
  let descriptors: string[];
  try {
    descriptors = readdirSync('/proc/self/fd');
  } catch {
    return; // Not Linux: no /proc to read.
  }
  for (const fd of descriptors.map(Number).filter((fd) => fd > 2)) {
    try {
      if (fstatSync(fd).isFile()) closeSync(fd);
    } catch {
      // The descriptor of the listing itself, already closed.
    }
  }
}
