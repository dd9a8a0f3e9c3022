import { resolve } from 'node:path';
import { loadLocalIdp } from './idp';

/** `npm run --silent token -- <accountId>`: prints a session token for that account, and nothing else. */
const accountId = process.argv[2];
if (!accountId) {
  process.stderr.write('usage: npm run --silent token -- <accountId>\n');
  process.exit(2);
}
const idp = await loadLocalIdp(resolve(process.env.DATA_DIR || '.data'));
process.stdout.write(`${idp.mintToken(accountId)}\n`);
