import { createHash } from 'node:crypto';
import type { Duplex, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * Pages that aim DevTools traffic at the renderer process, through the real handler, the renderer's own process and
 * real Chromium, with another account's capture beside them (devtoolsMessageCap.ts).
 *
 * One message longer than a V8 string may be: 100 million control characters are 100 MB in the page, and Chromium
 * escapes each as six characters of JSON. Sent as a request body, they make a 733 MB `Network.requestWillBeSent`
 * event, which puppeteer's pipe reader turned into one string: it threw where nothing could catch it, and the
 * renderer process died with every capture it ran. (`console.log` of the same string did it too.) An answer to one
 * of our commands that passes its cap, a screenshot, is in oversizedImages.test.ts; a page cannot make its HTML that
 * large within its budget: 50 million such characters already take 30 s.
 *
 * Many messages: 20,000 objects logged every 5 ms. For each object, puppeteer sent a command of its own to release
 * it, and the renderer process was held for 48 s, the capture beside it failing. Many requests: each is several
 * Network events, even a `data:` fetch, and each carries its body (pageTrafficGuard.ts).
 */

const CONTROL_CHARACTERS = "'\\x01'.repeat(1e8)";
const VIEWPORT = { width: 640, height: 480 };
const postsOf = (characters: number) => `const body = '\\x01'.repeat(${characters});
  setInterval(() => fetch('http://10.255.255.1/', { method: 'POST', body }).catch(() => {}), 100);`;
const ONE_PIXEL_GIF = Buffer.from('R0lGODlhAQABAAAAACH5BAEAAAAALAAAAAABAAEAAAIBAAA=', 'base64');

let pages: PageServer;
const sockets = new Set<Duplex>();
let harness: ScreenshotHarness;

beforeAll(async () => {
  pages = await startPageServer({
    '/posts': solidPage(
      '#00ff00',
      `<script>fetch('/sink', { method: 'POST', body: ${CONTROL_CHARACTERS} }).catch(() => {});</script>`,
    ),
    '/sink': (req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(204).end());
    },
    '/logs': solidPage(
      '#00ff00',
      '<script>const objects = Array.from({ length: 20000 }, () => ({})); setInterval(() => console.log(...objects), 5);</script>',
    ),
    '/requests': solidPage(
      '#00ff00',
      "<script>setInterval(() => { for (let i = 0; i < 200; i++) fetch('data:,x').catch(() => {}); }, 5);</script>",
    ),
    '/thumbnails': solidPage(
      '#00ff00',
      '',
      Array.from({ length: 1_000 }, (_, i) => `<img src="/thumbnail?${i}" width="1" height="1">`).join(''),
    ),
    '/thumbnail': (_req, res) => res.writeHead(200, { 'content-type': 'image/gif' }).end(ONE_PIXEL_GIF),
    // Red team (round 18): 5 requests to its own origin every 5 ms, half the first limit's 2,000 a second.
    '/pings': solidPage(
      '#00ff00',
      "<script>setInterval(() => { for (let i = 0; i < 5; i++) fetch('/ping?' + Math.random()).catch(() => {}); }, 5);</script>",
    ),
    '/ping': (_req, res) => res.writeHead(204).end(),
    '/plain': solidPage('#00ff00'),
    // Red team (round 17): ten bodies of 8 MB of control characters a second (each a 48 MB event), to an address the
    // egress gate refuses, so that no server ever reads them; round 19: of 12 MB, each an 88 MB event the pipe drops.
    '/big-posts': solidPage('#00ff00', `<script>${postsOf(8e6)}</script>`),
    '/huge-posts': solidPage('#00ff00', `<script>${postsOf(12e6)}</script>`),
    // Session 23: a hundred requests a second for 2 MB URLs, each failed request four 2 MB events: the page was
    // captured and a capture beside it took 15.6 s instead of 0.3.
    '/long-urls': solidPage(
      '#00ff00',
      "<script>const u = 'http://10.255.255.1/?' + 'u'.repeat(2e6); setInterval(() => { for (let i = 0; i < 10; i++) fetch(u + i).catch(() => {}); }, 100);</script>",
    ),
    // Red team (round 19): three uploads of 6 MB at once.
    '/uploads': solidPage(
      '#00ff00',
      "<script>for (let i = 0; i < 3; i++) fetch('/sink', { method: 'POST', body: 'x'.repeat(6e6) }).catch(() => {});</script>",
    ),
    '/messages': solidPage(
      '#00ff00',
      `<script>
        new EventSource('/events');
        for (let i = 0; i < 4; i++) {
          const socket = new WebSocket(\`ws://\${location.host}/socket\`);
          socket.onopen = () => setInterval(() => { for (let j = 0; j < 500; j++) socket.send('x'); }, 5);
        }
      </script>`,
    ),
    '/worker-messages': solidPage(
      '#00ff00',
      `<script>
        const code = \`for (let i = 0; i < 4; i++) new WebSocket('ws://\${location.host}/socket');\`;
        new Worker(URL.createObjectURL(new Blob([code], { type: 'text/javascript' })));
      </script>`,
    ),
    '/ticker': solidPage(
      '#00ff00',
      `<script>
        const socket = new WebSocket(\`ws://\${location.host}/quiet\`);
        socket.onopen = () => setInterval(() => { for (let j = 0; j < 20; j++) socket.send('x'); }, 10);
      </script>`,
    ),
    // Red team (round 17): no request at all. 50 srcdoc frames every 5 ms, the previous 50 removed (each a document
    // the browser process commits).
    '/frames': solidPage(
      '#00ff00',
      `<script>let kept = [];
      setInterval(() => {
        for (const f of kept) f.remove();
        kept = [];
        for (let i = 0; i < 50; i++) { const f = document.createElement('iframe'); f.srcdoc = '<p>x'; document.body.append(f); kept.push(f); }
      }, 5);</script>`,
    ),
    '/many-frames': solidPage(
      '#00ff00',
      '',
      Array.from({ length: 200 }, (_, i) => `<iframe width="10" height="10" srcdoc="<p>${i}"></iframe>`).join(
        '',
      ),
    ),
    '/events': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      floodWith(res, Buffer.from('data: x\n\n'.repeat(8_192)));
    },
  });
  pages.server.on('upgrade', (req, socket: Duplex) => {
    sockets.add(socket);
    // A WebSocket server that accepts any socket and drops what it is sent; on `/socket` it sends one-byte text
    // frames as fast as the socket drains.
    const accept = createHash('sha1')
      .update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
      .digest('base64');
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
    );
    socket.on('error', () => undefined);
    socket.resume();
    if (req.url === '/socket')
      floodWith(socket, Buffer.from([0x81, 0x01, 0x78]).toString('latin1').repeat(20_000), 'latin1');
  });
  harness = await startScreenshotHarness({ ALLOW_PRIVATE_HOSTS: pages.hostPort });
});

afterAll(async () => {
  await harness?.close();
  // The server no longer counts a socket it upgraded, and would wait for it.
  for (const socket of sockets) socket.destroy();
  await pages?.close();
});

/** Writes `chunk` again each time the stream drains, until it ends. */
function floodWith(stream: Writable, chunk: Buffer | string, encoding?: BufferEncoding) {
  const write = () => {
    while (!stream.writableEnded && !stream.destroyed) {
      const more = encoding ? stream.write(chunk, encoding) : stream.write(chunk);
      if (!more) return;
    }
  };
  stream.on('drain', write);
  stream.on('error', () => undefined);
  write();
}

/**
 * The longest the capture beside a stopped flood may take: held by the floods, such captures took 7 to 38 s or
 * failed. On a loaded CI machine one took 5.2 s beside the srcdoc flood after the flood had been stopped.
 */
const heldUpBound = (aloneMs: number) => Math.max(6_500, aloneMs * 10);

/** The page's capture and, once it is under way, another account's, with the time each took. */
async function besideAnother(path: string, delay: number) {
  const attacker = await harness.newAccount();
  const neighbour = await harness.newAccount();
  // The neighbour's capture alone, in this run: the yardstick of the one beside the page.
  const aloneStarted = performance.now();
  expect((await harness.shoot(neighbour.apiKey, { url: `${pages.origin}/plain`, ...VIEWPORT })).status).toBe(
    200,
  );
  const aloneMs = performance.now() - aloneStarted;
  const started = performance.now();
  const attack = harness.shoot(attacker.apiKey, { url: `${pages.origin}/${path}`, ...VIEWPORT, delay });
  await new Promise((resolve) => setTimeout(resolve, delay / 2));
  const besideStarted = performance.now();
  const beside = await harness.shoot(neighbour.apiKey, { url: `${pages.origin}/plain`, ...VIEWPORT });
  const besideMs = performance.now() - besideStarted;
  const answer = await attack;
  return { answer, ms: performance.now() - started, beside, besideMs, aloneMs };
}

describe('a DevTools message longer than a string may be', () => {
  it('is dropped: the renderer process and a capture beside it go on, and its bytes count against the page', async () => {
    const { pid } = await harness.renderer.processInfo();
    const { answer, beside } = await besideAnother('posts', 3_000);
    // A request body: more than the page may post (red team, round 19; before, the page was captured).
    expect(answer.status).toBe(500);
    expect(answer.json()).toMatchObject({ message: expect.stringContaining('URLs, headers or bodies') });
    expect(beside.status).toBe(200);
    expect((await harness.renderer.processInfo()).pid).toBe(pid);
  }, 120_000);
});

describe('a page that logs without end', () => {
  it('is captured after its delay, and a capture beside it is not held up', async () => {
    const { answer, ms, beside, besideMs } = await besideAnother('logs', 4_000);
    expect(answer.status).toBe(200);
    // Generous for a loaded machine: held by the flood, they took 48 s and the one beside failed.
    expect(ms).toBeLessThan(20_000);
    expect(beside.status).toBe(200);
    expect(besideMs).toBeLessThan(15_000);
  }, 120_000);
});

describe('a page that makes requests without end', () => {
  it.each([
    ['data: fetches, 200 every 5 ms', 'requests'],
    // Red team (round 18): requests to its own origin at half the first limit, which failed a capture beside it.
    ['requests to its own origin, 5 every 5 ms', 'pings'],
  ])(
    'fails as the page once it keeps a rate no real page keeps (%s), and a capture beside it is not held up',
    async (_, path) => {
      const { answer, beside, besideMs, aloneMs } = await besideAnother(path, 6_000);
      expect(answer.status).toBe(500);
      expect(answer.json()).toMatchObject({ message: expect.stringContaining('kept starting requests') });
      expect(beside.status).toBe(200);
      // Beside the data: flood such a capture took 7 to 32 s, and twice failed; beside the pings it failed after 38 s.
      expect(besideMs).toBeLessThan(heldUpBound(aloneMs));
    },
    120_000,
  );

  it.each([
    ['8 MB bodies, ten a second', 'big-posts'],
    // Red team (round 19): each event too large for the pipe, dropped before puppeteer saw a request; the page was
    // captured, and a capture beside it took 2.1 to 8.2 s.
    ['12 MB bodies, ten a second', 'huge-posts'],
    ['2 MB URLs without a body, a hundred a second', 'long-urls'],
  ])(
    'fails as the page once its requests carry more than any page sends (%s), and a capture beside it is not held up',
    async (_, path) => {
      const { answer, beside, besideMs, aloneMs } = await besideAnother(path, 6_000);
      expect(answer.status).toBe(500);
      expect(answer.json()).toMatchObject({ message: expect.stringContaining('URLs, headers or bodies') });
      expect(beside.status).toBe(200);
      // Before: beside the 8 MB bodies such a capture took 11 to 16 s.
      expect(besideMs).toBeLessThan(heldUpBound(aloneMs));
    },
    120_000,
  );

  it('leaves uploads alone: three of 6 MB at once', async () => {
    const account = await harness.newAccount();
    const answer = await harness.shoot(account.apiKey, {
      url: `${pages.origin}/uploads`,
      ...VIEWPORT,
      delay: 1_000,
    });
    expect(answer.status).toBe(200);
  }, 120_000);

  it('leaves a heavy honest page alone: a thousand images asked for at once', async () => {
    const account = await harness.newAccount();
    const answer = await harness.shoot(account.apiKey, { url: `${pages.origin}/thumbnails`, ...VIEWPORT });
    expect(answer.status).toBe(200);
  }, 120_000);
});

describe('a page that floods its WebSockets and an EventSource with messages', () => {
  it.each([
    ['its own', 'messages'],
    ["a worker's", 'worker-messages'],
  ])(
    'fails as the page once it passes a rate no real page reaches (sockets of %s), and a capture beside it is not held up',
    async (_, path) => {
      const { answer, ms, beside, besideMs, aloneMs } = await besideAnother(path, 4_000);
      expect(answer.status).toBe(500);
      expect(answer.json()).toMatchObject({
        message: expect.stringContaining('WebSocket or EventSource messages'),
      });
      // Before: the page ran past its budget (34 s, "stopped responding"), and the capture beside it took 10 s.
      expect(ms).toBeLessThan(20_000);
      expect(beside.status).toBe(200);
      expect(besideMs).toBeLessThan(heldUpBound(aloneMs));
    },
    120_000,
  );

  it('leaves a live page alone: a socket that ticks 2,000 messages a second', async () => {
    const account = await harness.newAccount();
    const answer = await harness.shoot(account.apiKey, {
      url: `${pages.origin}/ticker`,
      ...VIEWPORT,
      delay: 3_000,
    });
    expect(answer.status).toBe(200);
  }, 120_000);
});

describe('a page that floods the browser without a request', () => {
  it('fails as the page once it attaches srcdoc frames in a loop, and a capture beside it is not held up', async () => {
    const { answer, ms, beside, besideMs, aloneMs } = await besideAnother('frames', 4_000);
    expect(answer.status).toBe(500);
    expect(answer.json()).toMatchObject({ message: expect.stringContaining('frames faster') });
    // Before: its context outlived its budget and the capture beside it failed ("Browser could not be started").
    // Later, once in CI, its context took longer than its grace to close on a loaded machine, and the browser closed
    // at once under the capture beside it: now it closes after that capture (browserReplacedUnderCaptures.test.ts).
    expect(ms).toBeLessThan(20_000);
    expect(beside.status).toBe(200);
    // Looser than the other floods': the frame loop keeps the browser busy until the guard hears enough of it, and on
    // a loaded machine it slows below the budget for longer (docs/reliability.md, Known limits; in CI, with the whole
    // suite beside it, the capture beside took 11.6 s once). The failure it once caused is what this line keeps out.
    expect(besideMs).toBeLessThan(Math.max(20_000, aloneMs * 20));
  }, 120_000);

  it('leaves a page of 200 frames alone', async () => {
    const account = await harness.newAccount();
    const answer = await harness.shoot(account.apiKey, { url: `${pages.origin}/many-frames`, ...VIEWPORT });
    expect(answer.status).toBe(200);
  }, 120_000);
});
