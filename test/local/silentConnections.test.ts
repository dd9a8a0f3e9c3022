import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';

/**
 * Red team (round 20): any process of the machine opened 20,000 connections to the local API port and sent nothing.
 * Nothing capped them, and Node held each for its 60 s headers timeout: they took every file descriptor, so the
 * table's and the local S3 API's own sockets failed (EMFILE), requests got resets and 503, and a charged capture's
 * usage record was not written. Fixed: each listening address holds at most MAX_CONNECTIONS (256) connections, new
 * ones past that closed at once, and one that sends no headers for HEADERS_TIMEOUT_MS (10 s, checked every second)
 * is closed (`local/localService.ts`). Here the bound is 4 and the timeout 500 ms.
 */
const BOUND = 4;
const HEADERS_TIMEOUT_MS = 500;
const SILENT = 12;

let pages: PageServer;
let service: TestLocalService;
const sockets: Socket[] = [];

beforeAll(async () => {
  pages = await startPageServer({ '/red': solidPage('red') });
  service = await startTestLocalService(
    { ALLOW_PRIVATE_HOSTS: pages.hostPort, FREE_CREDITS: '10', RATE_LIMIT_PER_HOUR: '1000' },
    { maxConnections: BOUND, headersTimeoutMs: HEADERS_TIMEOUT_MS },
  );
}, 120_000);

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await service?.close();
  await pages?.close();
});

/** Whether something listens at `host`:`port` (the connection is closed at once). */
async function listens(host: string, port: number): Promise<boolean> {
  const socket = connect(port, host);
  try {
    await once(socket, 'connect');
    return true;
  } catch {
    return false;
  } finally {
    socket.destroy();
  }
}

describe('silent connections to the local API port', () => {
  it('are bounded and let go soon, and the API then answers and records usage', async () => {
    const { port } = new URL(service.url);
    // Both listening addresses where the machine has an IPv6 loopback (its timeouts were checked every 30 s).
    const hosts = ['127.0.0.1', ...((await listens('::1', Number(port))) ? ['::1'] : [])];
    const closed: Promise<unknown>[] = [];
    for (let i = 0; i < SILENT; i++) {
      const socket = connect(Number(port), hosts[i % hosts.length]);
      socket.on('error', () => {});
      // Reads what the server sends (its 408), so that its closing shows here.
      socket.resume();
      sockets.push(socket);
      await once(socket, 'connect');
      closed.push(once(socket, 'close'));
    }
    // Every one is closed by the server: those past the bound at once, the others after the headers timeout (they
    // stayed open for a minute before).
    const started = Date.now();
    await Promise.race([
      Promise.all(closed),
      new Promise((_, reject) => setTimeout(() => reject(new Error('silent connections still held')), 5_000)),
    ]);
    expect(Date.now() - started).toBeLessThan(5_000);

    const account = await service.newAccount();
    const capture = await service.request('/api/screenshot', {
      bearer: account.apiKey,
      body: { url: `${pages.origin}/red`, width: 800, height: 600 },
    });
    expect(capture.status).toBe(200);
    expect(capture.headers.get('x-credits-charged')).toBe('1');
    expect(await service.usageLastHour(account.token, 1)).toEqual({ captures: 1, failed: 0, credits: 1 });
  }, 120_000);
});
