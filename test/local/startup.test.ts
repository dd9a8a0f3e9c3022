import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { claimDataFormat, DATA_FORMAT } from '../../local/dataFormat';
import { isDiskFull } from '../../local/diskSpace';
import { startLocalService } from '../../local/localService';
import { unusedPort } from '../helpers/pageServer';

describe('a local server that is still starting', () => {
  it('answers every request with 503 and Retry-After, or refuses the connection, never silence', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'screenshot-startup-'));
    const port = await unusedPort();
    const starting = startLocalService({ dataDir, port, inMemoryStore: true });
    let ready = false;
    void starting.then(() => {
      ready = true;
    });
    const answers: (number | string)[] = [];
    try {
      // Poll from the first moment until the API answers; each request must end quickly, one way or another.
      while (!ready) {
        const answer = await fetch(`http://127.0.0.1:${port}/api/keys`, {
          signal: AbortSignal.timeout(5_000),
        })
          .then(async (response) => {
            if (response.status === 503) {
              expect(response.headers.get('retry-after')).toBe('1');
              expect(await response.json()).toEqual({ message: expect.stringMatching(/starting/i) });
            } else {
              await response.body?.cancel();
            }
            return response.status;
          })
          .catch((error: Error & { cause?: { code?: string } }) => error.cause?.code ?? error.name);
        answers.push(answer);
      }
      // 401: the API answered (no session token) a moment before the start-up promise resolved.
      expect(answers.every((answer) => [503, 'ECONNREFUSED', 401].includes(answer))).toBe(true);
      expect(answers).toContain(503);
      // Ready: the same request reaches the handler (401 without a session token).
      expect((await fetch(`http://127.0.0.1:${port}/api/keys`)).status).toBe(401);
    } finally {
      await (await starting).close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('a local setting that counts captures or waiting places', () => {
  /**
   * Red team (round 16): a negative LOCAL_MAX_CAPTURES passed `Number(...) || 4` and left every capture waiting for
   * ever. The start now fails, saying which setting, before anything listens.
   */
  it('stops the start with a message naming it when it is not a whole number of at least 1', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'screenshot-startup-'));
    const port = await unusedPort();
    try {
      for (const [name, value] of [
        ['LOCAL_MAX_CAPTURES', '-1'],
        ['LOCAL_MAX_QUEUED', '2.5'],
        ['LOCAL_QUEUE_VISIBILITY_SECONDS', 'soon'],
      ] as const) {
        await expect(
          startLocalService({ dataDir, port, inMemoryStore: true, env: { ...process.env, [name]: value } }),
        ).rejects.toThrow(`${name} must be a whole number of at least 1`);
      }
      // Nothing listens on the port it was given.
      await expect(fetch(`http://127.0.0.1:${port}/api/keys`)).rejects.toThrow();
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('a port another program holds', () => {
  /** Red team (round 27): Node's bare EADDRINUSE stack trace, with no word on what to do. */
  it('stops the start saying so, and what to do', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'screenshot-startup-'));
    const other = createServer();
    other.listen(0, '127.0.0.1');
    await once(other, 'listening');
    const { port } = other.address() as AddressInfo;
    try {
      await expect(startLocalService({ dataDir, port, inMemoryStore: true })).rejects.toThrow(
        `Another program holds 127.0.0.1:${port}: stop it, or choose another PORT`,
      );
    } finally {
      other.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('a disk with too little free space under DATA_DIR', () => {
  /**
   * Red team (round 27): the table's LevelDB and the local S3 API write there inside the server's process, and a
   * write that found the disk full ended it, with every account's requests in flight; on a full disk, the start
   * failed with dynalite's "Database is closed". The start now says why, before anything listens.
   */
  it('stops the start saying how much is free and what to do', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'screenshot-startup-'));
    const port = await unusedPort();
    try {
      await expect(
        startLocalService({ dataDir, port, inMemoryStore: true, minFreeBytes: Number.MAX_SAFE_INTEGER }),
      ).rejects.toThrow(/^Only \d+ MB are free on the disk of .*: npm start needs \d+ MB\. Free some space/);
      await expect(fetch(`http://127.0.0.1:${port}/api/keys`)).rejects.toThrow();
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('knows a write that found the disk full, as Node and LevelDB report it', () => {
    expect(
      isDiskFull(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' })),
    ).toBe(true);
    expect(
      isDiskFull(
        Object.assign(new Error('IO error: /d/dynamodb/000003.log: No space left on device'), {
          code: 'LEVEL_IO_ERROR',
        }),
      ),
    ).toBe(true);
    expect(isDiskFull(new Error('Database is closed'))).toBe(false);
  });
});

describe('a data dir a newer version wrote', () => {
  /** Red team (round 28): a rollback started on a newer version's data without a word, and failed its jobs 500. */
  it('stops the start saying so, and marks a data dir of this version or an older one as its own', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'screenshot-startup-'));
    const port = await unusedPort();
    try {
      await writeFile(join(dataDir, 'data-format'), `${DATA_FORMAT + 1}\n`);
      await expect(startLocalService({ dataDir, port, inMemoryStore: true })).rejects.toThrow(
        `${dataDir} was written by a newer version of this service (its data-format says "${DATA_FORMAT + 1}"; this one reads up to ${DATA_FORMAT})`,
      );
      // A mark it cannot read is a newer one's too.
      await writeFile(join(dataDir, 'data-format'), '{"format":2}');
      await expect(startLocalService({ dataDir, port, inMemoryStore: true })).rejects.toThrow(
        'was written by a newer version of this service',
      );
      await rm(join(dataDir, 'data-format'));
      const started = await startLocalService({ dataDir, port, inMemoryStore: true });
      await started.close();
      expect(await readFile(join(dataDir, 'data-format'), 'utf8')).toBe(`${DATA_FORMAT}\n`);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('the data-format mark', () => {
  /** Red team (round 29): two marks at once failed on one draft's name; a FIFO in its place hung the start. */
  it('is written by starts at the same moment, and refuses what is not a file, naming it', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'screenshot-startup-'));
    try {
      await Promise.all(Array.from({ length: 8 }, () => claimDataFormat(dataDir)));
      expect(await readFile(join(dataDir, 'data-format'), 'utf8')).toBe(`${DATA_FORMAT}\n`);
      await rm(join(dataDir, 'data-format'));
      await mkdir(join(dataDir, 'data-format'));
      await expect(claimDataFormat(dataDir)).rejects.toThrow(`${join(dataDir, 'data-format')} is not a file`);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
