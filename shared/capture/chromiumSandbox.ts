/**
 * Chromium's own sandbox: each renderer process in a user namespace of its own under a seccomp-bpf filter, so that
 * code that takes over a renderer can neither open files nor make most system calls. @sparticuz/chromium turns it off
 * (`--no-sandbox`, and `--no-zygote`, which only runs without it) because Lambda has no user namespaces; there the
 * renderer function holding nothing is the boundary. Elsewhere (`npm start` on a developer's machine) the sandbox
 * is kept wherever Chromium can set it up, which closes most of what a page that escapes the renderer could reach
 * there (docs/security.md).
 */

/** The flags that turn the sandbox off. (`--disable-setuid-sandbox` stays: the setuid helper is never used.) */
export const NO_SANDBOX_FLAGS = ['--no-sandbox', '--no-zygote'] as const;

/**
 * `CHROMIUM_SANDBOX`: `off` never tries; `on` insists (a launch without it fails); unset or `auto`, the sandbox is
 * tried except where it cannot work: on Lambda (no user namespaces) and as root (Chromium refuses its sandbox to
 * root), and where two launches with it fail, the process goes on without it, with a warning (chromiumLaunch.ts).
 */
export type SandboxChoice = 'on' | 'auto' | 'off';

/** What `npm start` says of each choice, so a developer knows whether a page that escapes its renderer is confined. */
export const SANDBOX_SUMMARY: Record<SandboxChoice, string> = {
  auto: "Chromium's own sandbox wherever this machine allows it (CHROMIUM_SANDBOX=auto; a warning in the log when not)",
  on: "Chromium's own sandbox, required (CHROMIUM_SANDBOX=on: a browser that cannot have it does not start)",
  off: 'none: CHROMIUM_SANDBOX=off or running as root, so a page that escapes its renderer runs as this user',
};

export function sandboxChoice(env: NodeJS.ProcessEnv, uid: number | undefined): SandboxChoice {
  const asked = env.CHROMIUM_SANDBOX;
  if (asked === 'on' || asked === 'off') return asked;
  if (asked !== undefined && asked !== 'auto') {
    throw new Error(`CHROMIUM_SANDBOX must be on, off or auto, not ${JSON.stringify(asked)}`);
  }
  return env.AWS_LAMBDA_FUNCTION_NAME !== undefined || uid === 0 ? 'off' : 'auto';
}
