import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ACCOUNT_ID_RULE, isAccountIdArgument } from './accountIdArgument';
import { loadLocalIdp } from './idp';
import { STATE_FILE } from './stateFile';

/** `npm run --silent token -- <accountId>`: prints a session token for that account, and nothing else. */
const [accountId, ...extra] = process.argv.slice(2);
// A token for an id no route accepts (over 128 characters) would only fail later, as 401 (red team, round 24).
if (!isAccountIdArgument(accountId) || extra.length > 0) {
  process.stderr.write(`usage: npm run --silent token -- <accountId>\n  ${ACCOUNT_ID_RULE}\n`);
  process.exit(2);
}
const dataDir = resolve(process.env.DATA_DIR || '.data');
// The token is signed with the key under DATA_DIR, and only a server using the same DATA_DIR accepts it: say so
// (on stderr, so stdout stays the token alone) when no server is running with this one.
if (!existsSync(join(dataDir, STATE_FILE))) {
  process.stderr.write(
    `note: no npm start is running with DATA_DIR=${dataDir}; this token is accepted (not 401) only by a server ` +
      'started with the same DATA_DIR, so run this command with the DATA_DIR you gave npm start\n',
  );
}
const idp = await loadLocalIdp(dataDir);
process.stdout.write(`${idp.mintToken(accountId)}\n`);
