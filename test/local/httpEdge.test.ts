import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { logged } from '../helpers/logs';

/** The local server's edge against raw HTTP (red team, round 20): what arrives before or beside any handler. */

let service: TestLocalService;
let port: number;
let account: Awaited<ReturnType<TestLocalService['newAccount']>>;

beforeAll(async () => {
  service = await startTestLocalService({ RATE_LIMIT_PER_HOUR: '1000' });
  port = Number(new URL(service.url).port);
  account = await service.newAccount();
}, 120_000);

afterAll(async () => {
  await service?.close();
});

/** Sends `raw` on a connection of its own and reads until the server closes it (or `waitMs` passes). */
function rawRequest(raw: string, waitMs = 3_000): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(raw));
    let answer = '';
    socket.on('data', (chunk) => {
      answer += chunk;
    });
    socket.on('error', () => {});
    const timer = setTimeout(() => socket.destroy(), waitMs);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(answer);
    });
  });
}

function parsed(answer: string): { status: number; headers: string; body: unknown } {
  const at = answer.indexOf('\r\n\r\n');
  const headers = answer.slice(0, at).toLowerCase();
  let body = answer.slice(at + 4);
  if (headers.includes('transfer-encoding: chunked')) {
    let text = '';
    for (let size = Number.parseInt(body, 16); size > 0; size = Number.parseInt(body, 16)) {
      const start = body.indexOf('\r\n') + 2;
      text += body.slice(start, start + size);
      body = body.slice(start + size + 2);
    }
    body = text;
  }
  return { status: Number(headers.split(' ')[1]), headers, body: JSON.parse(body) };
}

/**
 * Red team (round 20): a client that sent headers naming any Bearer value and part of a body, then hung up, made
 * the server log `ERROR "Unhandled error"` with a stack (Node's `aborted`), as often as it liked, and took it for a
 * 500 of ours. Fixed: the body's end by a hang-up is a client gone (`local/httpAdapter.ts`): no answer, an INFO line.
 */
describe('a client that hangs up in the middle of a body', () => {
  it.each(['/api/keys', '/api/screenshot', '/mcp', '/api/batches'])(
    'on %s is no error of ours',
    async (path) => {
      const logs = await logged(async () => {
        await new Promise<void>((resolve) => {
          const socket = connect(port, '127.0.0.1', () => {
            socket.write(
              `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer x\r\n` +
                'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a"',
              () => setTimeout(() => socket.destroy(), 100),
            );
          });
          socket.on('close', () => resolve());
        });
      }, 'hung up');
      expect(logs).not.toContain('"ERROR"');
      expect(logs).not.toContain('Unhandled error');
    },
  );
});

/**
 * Red team (round 20): `//x/api/screenshot`, `/api/./screenshot` and `http://h/api/screenshot` reach the screenshot
 * route, but its 405 and 413 answered `{ message }`, the style being chosen from the raw request target; and the
 * local `POST /mcp` answered its 413 as `{ message }`, where docs/api.md 17.3 (and the deployed handler) say
 * `{ error }`. Fixed: the style is that of the route on the path as routing reads it (`local/httpAdapter.ts`).
 */
describe('the error style', () => {
  const tooLarge = (path: string) =>
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 99999999\r\nConnection: close\r\n\r\n`;
  const put = (path: string) => `PUT ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`;

  it.each([
    ['/api/screenshot', 'error'],
    ['//x/api/screenshot', 'error'],
    ['/api/./screenshot', 'error'],
    ['/x/../api/screenshot', 'error'],
    ['http://h/api/screenshot', 'error'],
    ['/mcp', 'error'],
    ['/./mcp', 'error'],
    ['/api/batches', 'error'],
    ['/api/keys', 'message'],
    ['//x/api/keys', 'message'],
  ])('follows the route of %s: { %s }', async (path, field) => {
    const large = parsed(await rawRequest(tooLarge(path)));
    expect(large.status).toBe(413);
    expect(Object.keys(large.body as object)).toEqual([field]);
    const method = parsed(await rawRequest(put(path)));
    expect(method.status).toBe(405);
    expect(method.body).toEqual({ [field]: 'Method not allowed' });
  });
});

/**
 * Red team (round 20): `application/json-seq`, `application/json.evil` and `application/json, text/html` passed the
 * media type check (`\b` after `json`), where docs/api.md section 2 says 415. Fixed: `application/json` or a `+json`
 * type, then parameters only (`shared/http/request.ts`).
 */
describe('the Content-Type check', () => {
  const send = (path: string, bearer: string, contentType: string) =>
    fetch(`${service.url}${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${bearer}`, 'Content-Type': contentType },
      body: '{"name":1}',
    });
  const routes = () =>
    [
      ['/api/keys', account.token, 'message'],
      ['/api/screenshot', account.apiKey, 'error'],
      ['/api/batches', account.apiKey, 'error'],
    ] as const;

  it.each([
    'application/json-seq',
    'application/json.evil',
    'application/json/../text/html',
    'application/json, text/html',
    'application/jsonx',
  ])('refuses %s with 415', async (contentType) => {
    for (const [path, bearer, field] of routes()) {
      const answer = await send(path, bearer, contentType);
      expect(answer.status, path).toBe(415);
      expect(await answer.json()).toEqual({ [field]: 'Content-Type must be application/json' });
    }
  });

  it.each([
    'application/json',
    'application/json; charset=utf-8',
    'Application/JSON ;charset=UTF-8',
    'application/problem+json',
  ])('takes %s (the body then validated: 400)', async (contentType) => {
    for (const [path, bearer] of routes()) {
      expect((await send(path, bearer, contentType)).status, path).toBe(400);
    }
  });
});

/**
 * Red team (round 20): HTTP Node's parser refuses (an unknown method, Content-Length with Transfer-Encoding, a header too large) got Node's bare
 * answer, no body, where docs/api.md 4.3 says every error has a documented shape. Fixed: a `clientError` handler
 * answers `{ message }` as JSON and closes the connection (`local/httpAdapter.ts`, `local/localService.ts`).
 */
describe('malformed HTTP', () => {
  it.each([
    ['an unknown method', 'FOO /api/keys HTTP/1.1\r\nHost: h\r\n\r\n', 400, 'Bad request'],
    [
      'Content-Length and Transfer-Encoding',
      'POST /api/keys HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      400,
      'Bad request',
    ],
    [
      'a header too large',
      `GET /api/keys HTTP/1.1\r\nHost: h\r\nX-A: ${'a'.repeat(20_000)}\r\n\r\n`,
      431,
      'Request header fields too large',
    ],
  ])('(%s) is answered as JSON, and closed', async (_, raw, status, message) => {
    const answer = parsed(await rawRequest(raw));
    expect(answer.status).toBe(status);
    expect(answer.headers).toContain('content-type: application/json');
    expect(answer.headers).toContain('connection: close');
    expect(answer.body).toEqual({ message });
  });
});

/**
 * Left by round 21: a request without `Host`, and an expectation other than 100-continue, got Node's own answers
 * (`400` and `417`) without a body. Now both are answered in the route's style, and the connection closed.
 */
describe('what Node refused on its own', () => {
  it.each([
    [
      'an HTTP/1.1 request without Host',
      'GET /api/keys HTTP/1.1\r\n\r\n',
      400,
      { message: 'An HTTP/1.1 request must have a Host header' },
    ],
    [
      'the same on the screenshot route',
      'POST /api/screenshot HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}',
      400,
      { error: 'An HTTP/1.1 request must have a Host header' },
    ],
    [
      'Expect: 200-ok',
      'POST /api/keys HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}',
      417,
      { message: 'Only the expectation 100-continue is supported' },
    ],
  ])('(%s) is answered as JSON, and closed', async (_, raw, status, body) => {
    const answer = parsed(await rawRequest(raw));
    expect(answer.status).toBe(status);
    expect(answer.headers).toContain('content-type: application/json');
    expect(answer.headers).toContain('connection: close');
    expect(answer.body).toEqual(body);
  });

  it('still answers an HTTP/1.0 request without Host', async () => {
    const answer = parsed(await rawRequest('GET /api/keys HTTP/1.0\r\n\r\n'));
    expect(answer.status).toBe(401);
  });
});
