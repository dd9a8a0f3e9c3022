import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Red team (round 6): every user of a machine reads every process's arguments (/proc/<pid>/cmdline, `ps`), and
 * the commands the repo tells the developer to run put the credential in them: `curl -H "Authorization: Bearer
 * $KEY"` (README, docs/api.md) and the line `npm start` prints with the demo session token written out. Confirmed as
 * user `nobody`: a loop reading /proc/*\/cmdline while the developer ran the README's `curl $BASE/api/credits -H
 * "Authorization: Bearer $TOKEN"` got the session token (an hour of the account: its webhook secret, jobs, keys);
 * the API key lines hand out a key that lasts until revoked. docs/security.md treats other users of the machine as a
 * threat to `npm start`; the commands that go with it should not publish its credentials.
 *
 * Passes once documented commands pass credentials outside the argument list, e.g. curl's `-H @file` or `-K -`
 * reading `header = "Authorization: Bearer …"` from standard input, or `--oauth2-bearer` replaced by one of those.
 */
const repo = resolve(import.meta.dirname, '../..');
const documents = [
  'README.md',
  'local/server.ts',
  ...readdirSync(join(repo, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => join('docs', name)),
];

/** A credential given inline as a command argument: `-H "Authorization: Bearer …"`, `--header '…Bearer …'`. */
const INLINE_BEARER = /(?:-H|--header)\s+["']Authorization:\s*Bearer\s+[^<"'\s]/i;

describe('commands the repo documents', () => {
  it('never put a session token or an API key among a process arguments, which every user of the machine reads', () => {
    const exposed = documents.flatMap((file) =>
      readFileSync(join(repo, file), 'utf8')
        .split('\n')
        .filter((line) => INLINE_BEARER.test(line))
        .map((line) => `${file}: ${line.trim().slice(0, 100)}`),
    );
    expect(exposed).toEqual([]);
  });
});
