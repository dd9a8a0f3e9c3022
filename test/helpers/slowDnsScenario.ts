import { createSocket } from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { startEgressProxy } from '../../shared/egress/egressProxy';
import { createUrlPolicy } from '../../shared/egress/urlPolicy';
import { MAX_BATCH_SIZE } from '../../shared/jobs/submitBatch';
import { launchEgressBrowser } from './egressFixtures';
import { startPageServer } from './pageServer';

/**
 * Run by test/security/slowDns.test.ts in a network and mount namespace of its own, whose /etc/resolv.conf names the
 * address given as its first argument: the machine's resolver is then a name server this script plays. It answers
 * `victim.test` at once and never answers any other name, as an attacker's own authoritative server does for its
 * names. Prints one JSON line: how the victim's request ended, how long it took, and how many queries went unanswered.
 *
 * - `capture`: two captures share one browser and one egress proxy (the system resolver, as deployed): a hostile page
 *   that asks for images on names of its own, and, a moment later, another account's page by the name `victim.test`
 *   (127.0.0.1 here).
 * - `submission`: the front's URL policy checks a batch's worth of a customer's URLs on names of its own, then another
 *   account's URL on `victim.test` (a public address here).
 */
const nameServer = process.argv[2] ?? '127.0.0.77';
const mode = process.argv[3] === 'submission' ? 'submission' : 'capture';
const victimAddress = mode === 'capture' ? [127, 0, 0, 1] : [93, 184, 215, 14];
const HOSTILE_NAMES = 32;

const server = createSocket('udp4');
let unanswered = 0;
server.on('message', (query, from) => {
  const answer = answerFor(query);
  if (answer) server.send(answer, from.port, from.address);
  else unanswered += 1;
});
await new Promise<void>((resolve) => server.bind(53, nameServer, () => resolve()));
try {
  const outcome = mode === 'capture' ? await capture() : await submission();
  process.stdout.write(`${JSON.stringify({ ...outcome, unanswered })}\n`);
} finally {
  server.close();
}
process.exit(0);

async function capture() {
  const images = Array.from(
    { length: HOSTILE_NAMES },
    (_, i) => `<img src="http://n${i}.attacker.test/x.png">`,
  );
  const site = await startPageServer({
    '/hostile': `<!doctype html><title>hostile</title>${images.join('')}`,
    '/victim': '<!doctype html><title>victim</title><p>another account</p>',
  });
  const proxy = await startEgressProxy({ allowPrivateHosts: `${site.hostPort},victim.test:${site.port}` });
  const browser = await launchEgressBrowser(proxy.url);
  try {
    const hostile = await (await browser.createBrowserContext()).newPage();
    await hostile.goto(`${site.origin}/hostile`, { waitUntil: 'domcontentloaded' });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const victim = await (await browser.createBrowserContext()).newPage();
    const started = Date.now();
    const outcome = await victim.goto(`http://victim.test:${site.port}/victim`, { timeout: 30_000 }).then(
      (response) => ({ status: response?.status() ?? 0 }),
      (error: Error) => ({ error: error.message }),
    );
    return { ...outcome, ms: Date.now() - started };
  } finally {
    await browser.close();
    await proxy.close();
    await site.close();
  }
}

async function submission() {
  const policy = createUrlPolicy({ allowPrivateHosts: '' });
  for (let i = 0; i < MAX_BATCH_SIZE; i++) {
    policy.assertAllowed(`http://b${i}.attacker.test/`).catch(() => undefined);
  }
  await new Promise((resolve) => setTimeout(resolve, 200));
  const started = Date.now();
  // What any other request of the front resolves (another account's URL, an AWS endpoint): given up after 3 s.
  const outcome = await Promise.race([
    lookup('victim.test', { all: true }).then(
      (found) => ({ addresses: found.map((entry) => entry.address) }),
      (error: Error) => ({ error: error.message }),
    ),
    new Promise<{ error: string }>((resolve) =>
      setTimeout(() => resolve({ error: 'no answer within 3 s' }), 3_000),
    ),
  ]);
  return { ...outcome, ms: Date.now() - started };
}

/** The answer to a query for `victim.test` (A: victimAddress, any other type: none), or undefined for any other name. */
function answerFor(query: Buffer): Buffer | undefined {
  const labels: string[] = [];
  let at = 12;
  for (let length = query[at] ?? 0; length > 0; length = query[at] ?? 0) {
    labels.push(query.subarray(at + 1, at + 1 + length).toString('ascii'));
    at += 1 + length;
  }
  const questionEnd = at + 5;
  if (labels.join('.').toLowerCase() !== 'victim.test') return undefined;
  const isA = query.readUInt16BE(at + 1) === 1;
  const header = Buffer.from([0, 0, 0x81, 0x80, 0, 1, 0, isA ? 1 : 0, 0, 0, 0, 0]);
  query.copy(header, 0, 0, 2);
  const record = Buffer.from([0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4, ...victimAddress]);
  return Buffer.concat([header, query.subarray(12, questionEnd), ...(isA ? [record] : [])]);
}
