import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { Agent } from 'node:http';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { allowedVariables } from '../../shared/allowedVariables';
import { InvokedRenderer } from '../../shared/capture/invokedRenderer';
import type { CaptureLimits, CaptureResult, CaptureSpec, Renderer } from '../../shared/capture/renderer';
import { OWN_PORTS_VARIABLE, ownPorts } from '../../shared/egress/ownPorts';
import { CaptureFailedError, ValidationError } from '../../shared/errors';
import { logger } from '../../shared/logger';
import type { CaptureBudgets } from '../../shared/timing';
import { invokeCredentials, LOCAL_INVOKE_REGION } from './invokeServer';

/** The name the local Invoke API knows the renderer by (deployed: the function's alias ARN). */
export const LOCAL_RENDERER_FUNCTION = 'renderer';
/** Set by tests that shorten the capture budgets; the front is given the same. */
export const BUDGETS_VARIABLE = 'RENDERER_CAPTURE_BUDGETS';

/** What the front sends the renderer process first: the secret of the credentials it signs its invocations with. */
export interface StartMessage {
  /** 32 random bytes, base64. */
  invokeSecret: string;
}

export interface ReadyMessage {
  /** The local Invoke API's endpoint. */
  ready: string;
  /** Every port the process listens on (its Invoke API, its egress proxy): the front's egress gate refuses them. */
  ownPorts: number[];
}

/** What the renderer process sends after ReadyMessage: a port it opened (each capture's egress route) or closed. */
export interface PortMessage {
  ownPort: number;
  listening: boolean;
}

/**
 * The only variables of the front's environment the renderer process gets. Whatever else the front holds (DATA_DIR,
 * the local KMS key file, the identity provider's key, AWS credentials, TABLE_NAME) never reaches it.
 */
export const RENDERER_ENV_ALLOW_LIST = [
  'PATH',
  'HOME',
  'TZ',
  'TMPDIR',
  'LANG',
  'ALLOW_PRIVATE_HOSTS',
  'PAGE_MEMORY_LIMIT_MB',
  'CHROMIUM_PATH',
  'CHROMIUM_SANDBOX',
  'BROWSER_BUNDLE_DIR',
  'POWERTOOLS_LOG_LEVEL',
  'POWERTOOLS_SERVICE_NAME',
  'POWERTOOLS_METRICS_DISABLED',
] as const;

/** The renderer process's environment: the allow-listed variables of `env`, and the test budgets if any. */
export function rendererEnvironment(
  env: NodeJS.ProcessEnv,
  budgets?: CaptureBudgets,
): Record<string, string> {
  return {
    ...allowedVariables(env, RENDERER_ENV_ALLOW_LIST),
    // The front's own ports (API, DynamoDB, S3): the renderer's egress gate refuses them to pages, whatever
    // ALLOW_PRIVATE_HOSTS says. Read when the process starts, so a restarted process gets the current ones.
    [OWN_PORTS_VARIABLE]: ownPorts.list().join(','),
    ...(budgets ? { [BUDGETS_VARIABLE]: JSON.stringify(budgets) } : {}),
    // tsx would keep what it compiles in $TMPDIR/tsx-<uid>, a folder another user of the machine may have made
    // first and filled with code of theirs (red team); the npm scripts say `tsx --no-cache` for the same reason.
    TSX_DISABLE_CACHE: '1',
  };
}

const ENTRY = fileURLToPath(new URL('./rendererProcess.ts', import.meta.url));
/** tsx's loader, so the process runs the TypeScript sources as `npm start` does. */
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
/** How long a closing renderer process has to exit before it is killed. */
const EXIT_GRACE_MS = 5_000;
/** How long a connection to a suspect process may take before it is taken for dead. */
const ALIVE_CHECK_MS = 2_000;

interface RunningProcess {
  child: ChildProcess;
  /** The local Invoke API's endpoint. */
  url: string;
  /** The ports it listens on. */
  ownPorts: number[];
  renderer: InvokedRenderer;
  client: LambdaClient;
  /** Its last capture failed: it may have died, so the next capture first checks that it still answers. */
  suspect?: boolean;
}

export interface LocalRendererOptions {
  /** The front's environment; only the allow-list of it is passed on. */
  env: NodeJS.ProcessEnv;
  budgets?: CaptureBudgets;
}

/**
 * The renderer as a separate OS process, called through @aws-sdk/client-lambda as the deployed front calls the
 * renderer function. When the process dies, the captures it was running fail (500, refunded by the use case) and a
 * new process is started at once for the next ones.
 */
export class LocalRenderer implements Renderer {
  private running: Promise<RunningProcess> | undefined;
  /** The process `running` resolved to, once it has. */
  private current: RunningProcess | undefined;
  private closed = false;
  /** The exit of the process last dropped, which the next one waits for (see `forget`). */
  private previousExit: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: LocalRendererOptions) {}

  async capture(spec: CaptureSpec, limits: CaptureLimits): Promise<CaptureResult> {
    let running: RunningProcess;
    try {
      running = await this.process();
      // After a failed capture the process may have died without Node having told us yet (a killed process's exit
      // is reported a moment later, later still on a loaded machine): see that its endpoint still listens before
      // sending it a capture.
      if (running.suspect && !(await listens(running.url))) {
        this.forget(running);
        running = await this.process();
      }
    } catch (error) {
      logger.error('Renderer process unavailable', { error: error as Error });
      throw new CaptureFailedError(spec.url, 'Browser could not be started');
    }
    try {
      const result = await running.renderer.capture(spec, limits);
      running.suspect = false;
      return result;
    } catch (error) {
      // A field the browser refused is the renderer's own answer: nothing died.
      if (!(error instanceof ValidationError)) running.suspect = true;
      if (!running.child.connected) this.forget(running);
      throw error;
    }
  }

  async warmUp(): Promise<void> {
    await this.process();
  }

  async settle(): Promise<void> {
    await (await this.running?.catch(() => undefined))?.renderer.settle();
  }

  async close(): Promise<void> {
    this.closed = true;
    const running = await this.running?.catch(() => undefined);
    this.running = undefined;
    if (!running) return;
    await running.renderer.close();
    running.client.destroy();
    await stopProcess(running.child);
  }

  /** The running process's id, endpoint and ports (tests kill it, read its environment, or count its requests). */
  async processInfo(): Promise<{ pid: number; url: string; ownPorts: number[] }> {
    const { child, url, ownPorts } = await this.process();
    return { pid: child.pid ?? -1, url, ownPorts };
  }

  private process(): Promise<RunningProcess> {
    if (this.closed) return Promise.reject(new Error('The renderer is closed'));
    if (!this.running) {
      const starting = this.start();
      this.running = starting;
      starting.catch(() => {
        if (this.running === starting) this.running = undefined;
      });
    }
    return this.running;
  }

  private async start(): Promise<RunningProcess> {
    await this.previousExit;
    const child = spawn(process.execPath, ['--import', TSX_LOADER, ENTRY], {
      env: rendererEnvironment(this.options.env, this.options.budgets),
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    const secret = randomBytes(32);
    child.send({ invokeSecret: secret.toString('base64') } satisfies StartMessage);
    // Its log lines go out with the front's, through this process's streams (one terminal, one place to read them).
    child.stdout?.on('data', (chunk: Buffer) => process.stdout.write(chunk));
    child.stderr?.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    const followPorts = portsOf(child);
    const ready = await new Promise<ReadyMessage>((resolve, reject) => {
      child.on('message', (message: ReadyMessage | PortMessage | null) => {
        if (typeof message !== 'object' || message === null) return;
        if ('ready' in message) resolve(message);
        else followPorts(message);
      });
      child.once('exit', (code, signal) =>
        reject(new Error(`The renderer process exited at start (${signal ?? code})`)),
      );
      child.once('error', reject);
    });
    const { ready: url } = ready;
    // Its Invoke API and egress proxy are the service's ports for this process's egress gate too (a webhook is sent
    // from here, a capture's url is checked here), as long as the process lives.
    for (const port of ready.ownPorts) child.once('exit', ownPorts.add(port));
    const client = new LambdaClient({
      endpoint: url,
      region: LOCAL_INVOKE_REGION,
      // Only this front holds them (never the developer's own credentials, which the SDK would otherwise pick up).
      credentials: invokeCredentials(secret),
      maxAttempts: 1,
      // A connection per invocation (on the loopback): a kept one the process closed as idle while it was held (its
      // keep-alive timer fires first once it runs again) reset the capture sent on it, which is never retried.
      requestHandler: { httpAgent: new Agent({ keepAlive: false }) },
    });
    const running: RunningProcess = {
      child,
      url,
      ownPorts: ready.ownPorts,
      client,
      renderer: new InvokedRenderer(client, LOCAL_RENDERER_FUNCTION),
    };
    this.current = running;
    // The IPC channel closes as soon as the process dies (before Node reaps it and reports its exit).
    child.once('disconnect', () => this.forget(running));
    child.once('exit', (code, signal) => {
      // A process that stopped by itself, cleanly (Ctrl-C reaches the whole process group), is no warning.
      if (this.closed || code === 0) logger.info('The renderer process stopped', { code, signal });
      else logger.warn('The renderer process stopped', { code, signal });
      this.forget(running);
    });
    return running;
  }

  /** Drops a process that stopped, once, and starts a new one for the next captures. */
  private forget(stopped: RunningProcess): void {
    if (this.current !== stopped) return;
    this.current = undefined;
    this.running = undefined;
    stopped.client.destroy();
    // Whatever is left of it goes, its browser with it: none is ever left beside the next one (red team).
    if (stopped.child.exitCode === null && stopped.child.signalCode === null) {
      // Its ports leave the registry as it exits, and the next process is handed the registry as it starts: started
      // before (its IPC channel closes first), it refused the dead one's port numbers to pages for good, and a
      // server that later took one could not be captured (red team, round 26).
      const exited = once(stopped.child, 'exit');
      stopped.child.kill('SIGKILL');
      this.previousExit = Promise.race([exited, delay(EXIT_GRACE_MS, undefined, { ref: false })]);
    }
    if (this.closed) return;
    this.process().catch((error) => logger.error('Renderer restart failed', { error }));
  }
}

const MAX_REPORTS_PER_PORT = 8;

/**
 * Follows the ports the process reports it opened and closed: the front's egress gate refuses each while it listens,
 * and all of them once the process exits. A report that names no port is ignored.
 */
function portsOf(child: ChildProcess): (message: PortMessage) => void {
  const leaving = new Map<number, (() => void)[]>();
  child.once('exit', () => {
    for (const leave of [...leaving.values()].flat()) leave();
    leaving.clear();
  });
  return ({ ownPort, listening }) => {
    if (!Number.isInteger(ownPort) || ownPort < 1 || ownPort > 65_535) return;
    const held = leaving.get(ownPort) ?? [];
    if (listening) {
      // A port is added a few times at most: a process that says more is not believed (it cannot grow the front).
      if (held.length < MAX_REPORTS_PER_PORT) leaving.set(ownPort, [...held, ownPorts.add(ownPort)]);
      return;
    }
    held.pop()?.();
    if (held.length === 0) leaving.delete(ownPort);
  };
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), EXIT_GRACE_MS);
  await exited;
  clearTimeout(timer);
}

/**
 * Whether the local Invoke API at `url` still listens: a dead process's port refuses the connection, while the
 * kernel takes one for a live process whose event loop is held (decoding a large image took 2.2 s). An answer, which
 * needs that event loop, is not waited for: a busy process was taken for dead, and every capture it ran failed with
 * it (red team).
 */
function listens(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    const settle = (alive: boolean) => {
      socket.destroy();
      resolve(alive);
    };
    socket.setTimeout(ALIVE_CHECK_MS, () => settle(false));
    socket.once('connect', () => settle(true));
    socket.once('error', () => settle(false));
  });
}
