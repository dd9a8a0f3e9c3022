import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserBundle } from '../../shared/capture/browserBundle';
import { type LaunchedChromium, launchChromium } from '../../shared/capture/chromiumLaunch';
import { rendererPids } from '../helpers/chromiumProcesses';

/**
 * Chromium's own sandbox where the machine allows it (chromiumSandbox.ts), with real Chromium launched by
 * launchChromium. CI runs as root, to whom Chromium refuses its sandbox, so there the browser is started as `nobody`
 * (setpriv, util-linux) from a copy of the browser bundle that user can read: as it runs for a developer. Whether
 * the machine allows it is asked of the kernel apart (util-linux's unshare, with the namespaces Chromium's sandbox
 * makes), and the launch must agree. A machine that refuses the sandbox is stood in for by a script that answers as
 * Chromium does there, then starts the real one when asked without the sandbox.
 */

const NOBODY = 65534;
const asRoot = process.getuid?.() === 0;
let root: string;
/** Where Chromium's temp folders go: a folder the browser's user can write below. */
let temp: string;
let env: NodeJS.ProcessEnv;
/** The user Chromium runs as here. */
const browserUid = asRoot ? NOBODY : process.getuid?.();

/** Whether that user may make the namespaces Chromium's sandbox needs (a user namespace, with pid and network ones). */
function namespacesAllowed(): boolean {
  const unshare = ['unshare', '--user', '--map-root-user', '--pid', '--net', '--fork', 'true'];
  const [command, ...args] = asRoot
    ? ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--', ...unshare]
    : unshare;
  try {
    execFileSync(command as string, args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** An executable shell script at `path`. */
function script(path: string, body: string): string {
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'chromium-sandbox-'));
  chmodSync(root, 0o755);
  temp = join(root, 'temp');
  mkdirSync(temp, { mode: 0o777 });
  chmodSync(temp, 0o777);
  env = { ...process.env, TMPDIR: temp, HOME: temp };
  if (!asRoot) return;
  // A copy nobody can read wherever the checkout lives (a clone under a private folder included): hard links when
  // the file system allows them.
  const bundle = join(root, 'bundle');
  const source = browserBundle(process.env).dir;
  try {
    execFileSync('cp', ['-al', source, bundle]);
  } catch {
    rmSync(bundle, { recursive: true, force: true });
    execFileSync('cp', ['-a', source, bundle]);
  }
  // Chromium's temp folder (its TMPDIR) is made by launchChromium, as root: it becomes the browser user's first.
  const asNobody = script(
    join(root, 'chromium-as-nobody'),
    `chown -R ${NOBODY}:${NOBODY} "$TMPDIR"\nexec setpriv --reuid=${NOBODY} --regid=${NOBODY} --clear-groups -- "${bundle}/chromium/chromium" "$@"`,
  );
  env = { ...env, BROWSER_BUNDLE_DIR: bundle, CHROMIUM_PATH: asNobody };
}, 120_000);

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

/** What the kernel says of a process: its seccomp mode (2: a filter) and its user namespace. */
function confinement(pid: number): { seccomp: string | undefined; userNamespace: string } {
  return {
    seccomp: /^Seccomp:\s*(\d)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1],
    userNamespace: readlinkSync(`/proc/${pid}/ns/user`),
  };
}

describe("Chromium's sandbox on a machine that allows it", () => {
  let launched: LaunchedChromium | undefined;
  afterAll(async () => {
    await launched?.browser.close();
  });

  it('puts every renderer in a user namespace of its own under a seccomp filter, and still captures', async () => {
    launched = await launchChromium([], { ...env, CHROMIUM_SANDBOX: 'auto' }, browserUid);
    // Sandboxed exactly where the kernel lets that user make the namespaces (on these machines, it does).
    expect(launched.sandboxed).toBe(namespacesAllowed());
    const context = await launched.browser.createBrowserContext();
    const page = await context.newPage();
    await page.setViewport({ width: 320, height: 240 });
    await page.goto('data:text/html,<body style="background:%2300ff00"><p>sandboxed</p></body>');
    const image = await page.screenshot({ type: 'png' });
    expect(Buffer.from(image).subarray(1, 4).toString('latin1')).toBe('PNG');

    const browserPid = launched.browser.process()?.pid;
    expect(browserPid).toBeDefined();
    const renderers = await rendererPids(browserPid as number);
    expect(renderers.length).toBeGreaterThan(0);
    const ours = readlinkSync('/proc/self/ns/user');
    for (const pid of renderers) {
      const { seccomp, userNamespace } = confinement(pid);
      // Without the sandbox (as on Lambda) the same renderers run unconfined: seccomp 0, our user namespace.
      expect(seccomp).toBe(launched.sandboxed ? '2' : '0');
      expect(userNamespace === ours).toBe(!launched.sandboxed);
    }
    await context.close();
  }, 120_000);
});

describe('a machine that refuses the sandbox', () => {
  let refusals: string;
  let refusing: NodeJS.ProcessEnv;
  beforeAll(() => {
    refusals = join(root, 'refusals');
    writeFileSync(refusals, '');
    const real = env.CHROMIUM_PATH ?? browserBundle(process.env).executablePath;
    // Chromium's own words when unprivileged user namespaces are off (a kernel setting, AppArmor on Ubuntu 23.10+).
    const refuser = script(
      join(root, 'chromium-refusing-its-sandbox'),
      [
        'case " $* " in',
        `  *" --no-sandbox "*) exec "${real}" "$@" ;;`,
        'esac',
        `echo refused >> "${refusals}"`,
        'echo "[1126/170000.000000:FATAL:content/browser/zygote_host/zygote_host_impl_linux.cc:128] No usable sandbox! If you are running on Ubuntu 23.10+ or another Linux distro that has disabled unprivileged user namespaces with AppArmor, see https://chromium.googlesource.com/chromium/src/+/main/docs/security/apparmor-userns-restrictions.md." >&2',
        'exit 1',
      ].join('\n'),
    );
    refusing = { ...env, CHROMIUM_PATH: refuser, CHROMIUM_SANDBOX: 'auto' };
  });

  it('gets a browser without it after two refusals, and asks no more in that process', async () => {
    // As any user but root: root is never asked.
    const first = await launchChromium([], refusing, 1000);
    const second = await launchChromium([], refusing, 1000);
    try {
      expect(first.sandboxed).toBe(false);
      expect(second.sandboxed).toBe(false);
      expect((await first.browser.version()).length).toBeGreaterThan(0);
      // The first launch, and the one more every failed launch gets; then never again.
      expect(readFileSync(refusals, 'utf8').trim().split('\n')).toEqual(['refused', 'refused']);
    } finally {
      await Promise.all([first.browser.close(), second.browser.close()]);
    }
  }, 120_000);

  it('fails the launch when the sandbox was insisted on', async () => {
    await expect(launchChromium([], { ...refusing, CHROMIUM_SANDBOX: 'on' }, 1000)).rejects.toThrow();
  }, 120_000);
});
