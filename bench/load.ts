/**
 * `npm run load`: sustained mixed traffic against the local server (`npm start`, as a child process with its own
 * data and temp folders) with autocannon. Reports throughput, latency percentiles, answers by status, memory and
 * temp-folder use before and after, and checks that the credits charged add up. Exits non-zero on any unexpected
 * status, transport error, error log line, leaked browser process or growth beyond the thresholds.
 *
 * Settings: LOAD_DURATION_S (default 60), LOAD_MAX_RSS_GROWTH_MB (server process, default 100),
 * LOAD_MAX_TREE_RSS_GROWTH_MB (server and Chromium together, default 300), LOAD_MAX_TMP_GROWTH_MB (default 20).
 * Not part of `npm test`: it takes over a minute and loads the machine.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startPageServer } from '../test/helpers/pageServer';

const DURATION_S = Number(process.env.LOAD_DURATION_S ?? 60);
const MAX_RSS_GROWTH_MB = Number(process.env.LOAD_MAX_RSS_GROWTH_MB ?? 100);
const MAX_TREE_RSS_GROWTH_MB = Number(process.env.LOAD_MAX_TREE_RSS_GROWTH_MB ?? 300);
const MAX_TMP_GROWTH_MB = Number(process.env.LOAD_MAX_TMP_GROWTH_MB ?? 20);
/** The local server's capture bound (its default); capture connections never exceed it, so no 503 is expected. */
const CAPTURE_CONNECTIONS = 4;

// autocannon ships no type declarations; this is the part of its API used here.
interface CannonRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  onResponse?: (
    status: number,
    body: string,
    context: object,
    headers: Record<string, string | string[]>,
  ) => void;
}
interface Histogram {
  average: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}
interface CannonResult {
  /** total: answered; sent: sent, including those still in flight when the run stopped. */
  requests: Histogram & { total: number; sent: number };
  latency: Histogram;
  statusCodeStats: Record<string, { count: number }>;
  errors: number;
  timeouts: number;
}
type Cannon = (options: {
  url: string;
  connections: number;
  duration: number;
  timeout?: number;
  overallRate?: number;
  requests: CannonRequest[];
}) => Promise<CannonResult>;
const autocannon = createRequire(import.meta.url)('autocannon') as Cannon;

interface Traffic {
  name: string;
  /** Statuses this traffic is meant to get; anything else fails the run. */
  expected: number[];
  connections: number;
  overallRate?: number;
  requests: CannonRequest[];
}

async function main(): Promise<void> {
  const failures: string[] = [];
  const pages = await startPageServer({
    '/page': `<!doctype html><html><head><style>body{margin:0;font:16px sans-serif;background:linear-gradient(#fafafa,#cde)}</style></head><body>${'<p>Load test page with some text to lay out and paint.</p>'.repeat(40)}</body></html>`,
  });
  pageOrigin = pages.origin;
  const dataDir = await mkdtemp(join(tmpdir(), 'load-data-'));
  // Chromium's profiles and its unpacked binary go under the server's own TMPDIR, so growth there is ours alone.
  const serverTmp = await mkdtemp(join(tmpdir(), 'load-tmp-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const logs: string[] = [];

  const server = spawn(process.execPath, ['--import', 'tsx', 'local/server.ts'], {
    cwd: resolve(import.meta.dirname, '..'),
    env: {
      ...process.env,
      PORT: String(port),
      DATA_DIR: dataDir,
      TMPDIR: serverTmp,
      ALLOW_PRIVATE_HOSTS: pages.hostPort,
      RATE_LIMIT_PER_HOUR: '1000000000',
      FREE_CREDITS: '1000000000',
      POWERTOOLS_LOG_LEVEL: 'WARN',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const token = await startupToken(server, logs);
    const key = await json(await fetch(`${base}/api/keys`, post(token, { name: 'load' })));
    const apiKey = String(key.key);

    // Warm-up: Chromium unpacked and launched, first pages rendered, before the "before" measurement.
    for (let i = 0; i < 5; i++)
      await (await fetch(`${base}/api/screenshot`, post(apiKey, shot(320, 320, 'png')))).arrayBuffer();
    await sleep(2_000);
    const before = await measure(server, serverTmp);
    const balanceBefore = await balance(base, token);

    let chargedSeen = 0;
    const countCharge: CannonRequest['onResponse'] = (status, _body, _context, headers) => {
      if (status === 200) chargedSeen += Number(header(headers, 'x-credits-charged') ?? 0);
    };
    const capture = (body: string): CannonRequest => ({
      method: 'POST',
      path: '/api/screenshot',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body,
      onResponse: countCharge,
    });
    const traffic: Traffic[] = [
      {
        name: 'captures',
        expected: [200],
        connections: CAPTURE_CONNECTIONS,
        requests: [
          capture(shot(320, 320, 'png')),
          capture(shot(800, 600, 'jpeg')),
          capture(shot(1280, 720, 'webp')),
        ],
      },
      {
        name: 'key listing',
        expected: [200],
        connections: 2,
        overallRate: 20,
        requests: [{ method: 'GET', path: '/api/keys', headers: { authorization: `Bearer ${token}` } }],
      },
      {
        name: 'invalid requests',
        expected: [400, 401, 404, 405],
        connections: 2,
        overallRate: 40,
        requests: [
          { ...capture(JSON.stringify({ url: 'ftp://example.com', width: 10 })), onResponse: undefined },
          { ...capture('{"url":'), onResponse: undefined },
          { ...capture(JSON.stringify({ url: 'http://10.1.2.3/' })), onResponse: undefined },
          {
            method: 'POST',
            path: '/api/screenshot',
            headers: { 'content-type': 'application/json' },
            body: shot(320, 320, 'png'),
          },
          { method: 'GET', path: '/api/screenshot' },
          { method: 'GET', path: '/api/keys', headers: { authorization: 'Bearer not-a-token' } },
          { method: 'GET', path: '/api/nothing-here' },
        ],
      },
    ];

    process.stderr.write(`Running ${DURATION_S} s of mixed traffic against ${base} ...\n`);
    // Halfway through, to tell a plateau (warm caches, grown heap) from steady growth.
    const midway = sleep((DURATION_S * 1000) / 2).then(() => measure(server, serverTmp));
    const results = await Promise.all(
      traffic.map((t) =>
        autocannon({
          url: base,
          connections: t.connections,
          duration: DURATION_S,
          timeout: 30,
          requests: t.requests,
          ...(t.overallRate ? { overallRate: t.overallRate } : {}),
        }),
      ),
    );

    // Captures cut off when autocannon stopped still finish on the server (and are charged): let them drain.
    await sleep(5_000);
    const after = await measure(server, serverTmp);
    const balanceAfter = await balance(base, token);

    const lines: string[] = [];
    lines.push(
      `Mixed traffic for ${DURATION_S} s against the local server (npm start), autocannon ${cannonVersion()}.`,
      '',
    );
    lines.push(
      '| traffic | connections | requests | req/s | latency p50 / p90 / p99 / max (ms) | statuses | errors |',
    );
    lines.push('|---|---|---|---|---|---|---|');
    results.forEach((result, i) => {
      const t = traffic[i] as Traffic;
      const statuses = Object.entries(result.statusCodeStats)
        .map(([status, { count }]) => `${status}: ${count}`)
        .join(', ');
      const { p50, p90, p99, max } = result.latency;
      lines.push(
        `| ${t.name} | ${t.connections}${t.overallRate ? ` (≤${t.overallRate}/s)` : ''} | ${result.requests.total} | ${(result.requests.total / DURATION_S).toFixed(1)} | ${p50} / ${p90} / ${p99} / ${max} | ${statuses} | ${result.errors} (${result.timeouts} timeouts) |`,
      );
      for (const status of Object.keys(result.statusCodeStats).map(Number)) {
        if (!t.expected.includes(status)) failures.push(`${t.name}: unexpected status ${status}`);
      }
      if (result.errors > 0)
        failures.push(`${t.name}: ${result.errors} transport errors (${result.timeouts} timeouts)`);
    });

    const captures = results[0] as CannonResult;
    const inFlightAtStop = captures.requests.sent - captures.requests.total;
    const charged = balanceBefore - balanceAfter;
    lines.push(
      '',
      `Credits: ${charged} charged; ${chargedSeen} in the answers received; ${inFlightAtStop} captures in flight when the clients stopped (each costs 1).`,
    );
    // Each capture here costs 1: what was charged must be what was answered, plus at most the ones cut off.
    if (charged < chargedSeen || charged > chargedSeen + inFlightAtStop) {
      failures.push(
        `credits do not add up: charged ${charged}, answered ${chargedSeen}, in flight ${inFlightAtStop}`,
      );
    }

    const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
    const mid = await midway;
    lines.push('', '| measure | before | halfway | after | growth |', '|---|---|---|---|---|');
    const row = (name: string, pick: (s: Snapshot) => number, unit: (n: number) => string) =>
      lines.push(
        `| ${name} | ${unit(pick(before))} | ${unit(pick(mid))} | ${unit(pick(after))} | ${unit(pick(after) - pick(before))} |`,
      );
    row('server RSS (MB)', (s) => s.serverRss, mb);
    row('server + Chromium RSS (MB)', (s) => s.treeRss, mb);
    row('Chromium processes', (s) => s.chromiumProcesses, String);
    row('server open file descriptors', (s) => s.openFds, String);
    row('server TMPDIR (MB)', (s) => s.tmpBytes, mb);
    row('server TMPDIR entries', (s) => s.tmpEntries, String);

    const growthMb = (a: number, b: number) => (b - a) / 1024 / 1024;
    if (growthMb(before.serverRss, after.serverRss) > MAX_RSS_GROWTH_MB)
      failures.push('server RSS grew beyond the limit');
    if (growthMb(before.treeRss, after.treeRss) > MAX_TREE_RSS_GROWTH_MB)
      failures.push('server + Chromium RSS grew beyond the limit');
    if (growthMb(before.tmpBytes, after.tmpBytes) > MAX_TMP_GROWTH_MB)
      failures.push('TMPDIR grew beyond the limit');
    // A spare tab may be mid-way through opening; more than that is a leak.
    if (after.chromiumProcesses > before.chromiumProcesses + 1) failures.push('Chromium processes leaked');
    if (after.tmpEntries > before.tmpEntries) failures.push('new entries left in TMPDIR');
    if (after.openFds > before.openFds + 20) failures.push('file descriptors leaked');

    const errorLogs = logs.filter((line) => /"level":"(ERROR|CRITICAL)"/.test(line));
    lines.push('', `Server log lines at ERROR: ${errorLogs.length}.`);
    if (errorLogs.length > 0) failures.push(`server logged errors, first: ${errorLogs[0]}`);

    const orphansBefore = await processesMentioning(serverTmp);
    server.kill('SIGTERM');
    await Promise.race([once(server, 'exit'), sleep(15_000)]);
    await sleep(500);
    const orphans = await processesMentioning(serverTmp);
    lines.push(
      `After SIGTERM: server exited ${server.exitCode === null ? 'NO' : `with ${server.exitCode}`}; Chromium processes left: ${orphans} (of ${orphansBefore}).`,
    );
    if (server.exitCode === null) failures.push('server did not exit on SIGTERM');
    if (orphans > 0) failures.push('Chromium processes outlived the server');

    lines.push('', failures.length === 0 ? 'Result: PASS' : `Result: FAIL\n- ${failures.join('\n- ')}`);
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    if (server.exitCode === null) server.kill('SIGKILL');
    await pages.close();
    await rm(dataDir, { recursive: true, force: true });
    await rm(serverTmp, { recursive: true, force: true });
  }
  process.exitCode = failures.length === 0 ? 0 : 1;
}

function shot(width: number, height: number, format: string): string {
  return JSON.stringify({ url: `${pageOrigin}/page`, width, height, format, quality: 80 });
}
let pageOrigin = '';

function post(bearer: string, body: unknown): RequestInit {
  const payload = typeof body === 'string' ? body : JSON.stringify(body);
  return {
    method: 'POST',
    headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
    body: payload,
  };
}

async function json(response: Response): Promise<Record<string, unknown>> {
  if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);
  return (await response.json()) as Record<string, unknown>;
}

async function balance(base: string, token: string): Promise<number> {
  return Number(
    (await json(await fetch(`${base}/api/credits`, { headers: { authorization: `Bearer ${token}` } })))
      .balance,
  );
}

function header(headers: Record<string, string | string[]>, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return String(value);
  return undefined;
}

/** Reads the server's output until it prints its demo session token; keeps every line for the error count. */
async function startupToken(server: ChildProcess, logs: string[]): Promise<string> {
  let buffered = '';
  let token: string | undefined;
  const collect = (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    const parts = buffered.split('\n');
    buffered = parts.pop() ?? '';
    for (const line of parts) {
      logs.push(line);
      if (!token && /^[\w-]+\.[\w-]+\.[\w-]+$/.test(line.trim())) token = line.trim();
    }
  };
  server.stdout?.on('data', collect);
  server.stderr?.on('data', collect);
  const deadline = Date.now() + 60_000;
  while (!token) {
    if (server.exitCode !== null)
      throw new Error(`server exited with ${server.exitCode}:\n${logs.join('\n')}`);
    if (Date.now() > deadline) throw new Error(`server did not start:\n${logs.join('\n')}`);
    await sleep(100);
  }
  return token;
}

interface Snapshot {
  serverRss: number;
  treeRss: number;
  chromiumProcesses: number;
  openFds: number;
  tmpBytes: number;
  tmpEntries: number;
}

/** Memory of the server and everything below it, its descriptors, and what its TMPDIR holds. */
async function measure(server: ChildProcess, serverTmp: string): Promise<Snapshot> {
  const pid = server.pid as number;
  const tree = await descendants(pid);
  let treeRss = 0;
  let chromiumProcesses = 0;
  for (const p of [pid, ...tree]) {
    treeRss += await rssOf(p);
    if (p !== pid && /chrom/i.test(await readFile(`/proc/${p}/cmdline`, 'utf8').catch(() => '')))
      chromiumProcesses++;
  }
  const tmp = await folderUse(serverTmp);
  return {
    serverRss: await rssOf(pid),
    treeRss,
    chromiumProcesses,
    openFds: (await readdir(`/proc/${pid}/fd`)).length,
    tmpBytes: tmp.bytes,
    tmpEntries: (await readdir(serverTmp)).length,
  };
}

async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
}

async function descendants(root: number): Promise<number[]> {
  const parents = new Map<number, number>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    if (stat) parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
  }
  const below = new Set([root]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, ppid] of parents) {
      if (!below.has(pid) && below.has(ppid)) {
        below.add(pid);
        grew = true;
      }
    }
  }
  below.delete(root);
  return [...below];
}

/** Processes whose command line names the folder (Chromium's --user-data-dir lives in the server's TMPDIR). */
async function processesMentioning(folder: string): Promise<number> {
  let count = 0;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(folder)) count++;
  }
  return count;
}

async function folderUse(folder: string): Promise<{ bytes: number }> {
  let bytes = 0;
  for (const entry of await readdir(folder, { withFileTypes: true, recursive: true }).catch(() => [])) {
    if (entry.isFile())
      bytes += (await stat(join(entry.parentPath, entry.name)).catch(() => ({ size: 0 }))).size;
  }
  return { bytes };
}

async function freePort(): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as { port: number };
  await new Promise((done) => probe.close(done));
  return port;
}

function cannonVersion(): string {
  return (createRequire(import.meta.url)('autocannon/package.json') as { version: string }).version;
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

await main();
