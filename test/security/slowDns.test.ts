import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * Red team: the egress gate resolved each host a page names with dns.lookup, that is getaddrinfo on libuv's thread
 * pool, which lets lookups take at most 2 of its 4 threads (file system work keeps the others). A page names a few
 * hosts of its own whose name server never answers, and each lookup holds its thread until the resolver gives up
 * (5 s x 2 attempts by default), long after the gate's own 5 s timeout has stopped waiting for it. Another account's
 * capture in the same renderer process then cannot resolve anything: its page fails (net::ERR_EMPTY_RESPONSE after
 * 5 s), and so does every capture after it until the queued lookups drain, even after the hostile page's context
 * closed. The front's URL policy resolves a customer's URLs the same way (a batch checks up to 100 at once), so one
 * batch held every other lookup of the front's process as long. The gate now asks the name servers itself, on the event
 * loop (shared/egress/networkLookup.ts).
 *
 * The machine's resolver is replaced in a user, mount and network namespace of the scenario's own (util-linux's
 * unshare, iproute2's ip), where the scenario plays the name server; nothing of the host's configuration changes.
 */

/** A loopback address of the scenario's own network namespace, where it plays the name server. */
const NAME_SERVER = '127.0.0.77';
const scenario = fileURLToPath(new URL('../helpers/slowDnsScenario.ts', import.meta.url));
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const folder = mkdtempSync(join(tmpdir(), 'slow-dns-'));

afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** Runs the scenario in its namespaces with the given mode; answers the JSON line it printed. */
async function runScenario(mode: 'capture' | 'submission') {
  const resolvConf = join(folder, 'resolv.conf');
  // Shorter than the default 5 s x 2, so the test is quicker: still longer than the victim may wait.
  writeFileSync(resolvConf, `nameserver ${NAME_SERVER}\noptions timeout:3 attempts:1\n`);
  const { stdout } = await promisify(execFile)(
    'unshare',
    [
      '--user',
      '--map-root-user',
      '--mount',
      '--net',
      'sh',
      '-c',
      'ip link set lo up && mount --bind "$1" /etc/resolv.conf && exec "$2" --import "$3" "$4" "$5" "$6"',
      'sh',
      resolvConf,
      process.execPath,
      tsx,
      scenario,
      NAME_SERVER,
      mode,
    ],
    { timeout: 90_000 },
  );
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}');
}

describe('host names whose name server never answers', () => {
  it("named by a page do not stop another account's capture beside it from resolving its own host", async () => {
    const outcome = await runScenario('capture');
    // The hostile page's names reached the name server, which left them unanswered.
    expect(outcome.unanswered).toBeGreaterThan(0);
    // Alone, the victim's page loads in a few milliseconds; jammed, it failed after 5 s.
    expect(outcome).toMatchObject({ status: 200 });
    expect(outcome.ms).toBeLessThan(4_500);
  }, 120_000);

  it("in a customer's batch do not stop the front from resolving another account's host", async () => {
    const outcome = await runScenario('submission');
    expect(outcome.unanswered).toBeGreaterThan(0);
    expect(outcome).toMatchObject({ addresses: ['93.184.215.14'] });
    // Jammed: no answer within 3 s.
    expect(outcome.ms).toBeLessThan(2_500);
  }, 120_000);
});
