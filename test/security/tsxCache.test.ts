import { execFile } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * `npm start` (and the renderer process it forks, credits, token, mcp) runs through tsx, which would cache what it
 * compiles in `$TMPDIR/tsx-<uid>`, making that folder with a recursive mkdir: a folder that is already there is used as
 * it is, whoever owns it (red team). The scripts say `tsx --no-cache`, and the renderer process gets TSX_DISABLE_CACHE.
 * /tmp is shared by every user of the machine, so another user who makes /tmp/tsx-<developer's uid> before the developer's first start (after a reboot, say) writes the compiled modules the
 * service then runs: their code runs as the developer, with DATA_DIR, every key and the table (confirmed as `nobody`).
 * docs/security.md counts other users of the machine as a threat (DATA_DIR is owner-only for them).
 *
 * Here the start script's own command runs a small file twice, in a TMPDIR where another user made that folder first,
 * and between the two runs "they" replace the cached module.
 */
const repo = resolve(import.meta.dirname, '../..');
const startScript: string = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')).scripts.start;
const folder = mkdtempSync(join(tmpdir(), 'tsx-cache-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

async function runLikeStart(tmp: string, file: string): Promise<string> {
  const command = startScript.replace('local/server.ts', file);
  const { stdout } = await promisify(execFile)('sh', ['-c', command], {
    cwd: repo,
    env: { ...process.env, TMPDIR: tmp, PATH: `${join(repo, 'node_modules/.bin')}:${process.env.PATH}` },
    timeout: 60_000,
  });
  return stdout.trim();
}

describe("tsx's compile cache in a temp folder shared with other users", () => {
  it("never runs a module another user's folder holds instead of ours", async () => {
    const sharedTmp = join(folder, 'tmp');
    mkdirSync(sharedTmp, { mode: 0o1777 });
    chmodSync(sharedTmp, 0o1777);
    // Another user got there first: the cache folder under the developer's uid, theirs and open to all.
    const planted = join(sharedTmp, `tsx-${process.geteuid?.() ?? ''}`);
    mkdirSync(planted);
    chmodSync(planted, 0o777);
    if (process.geteuid?.() === 0) chownSync(planted, 65534, 65534);
    const probe = join(folder, 'probe.ts');
    writeFileSync(probe, 'const who: string = "ours";\nconsole.log(who);\n');

    expect(await runLikeStart(sharedTmp, probe)).toBe('ours');
    for (const entry of readdirSync(planted)) {
      rmSync(join(planted, entry));
      writeFileSync(
        join(planted, entry),
        JSON.stringify({
          code: 'console.log("theirs");',
          warnings: [],
          map: { version: 3, mappings: '', names: [], sources: [] },
        }),
      );
    }
    expect(await runLikeStart(sharedTmp, probe)).toBe('ours');
  }, 120_000);
});
