import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  CredentialsNotOpenedError,
  openCredentials,
  sealCredentials,
} from '../../shared/jobs/jobCredentials';
import { AesGcmSecretCipher } from '../../shared/signing/aesGcmSecretCipher';
import type { SecretCipher } from '../../shared/signing/secretCipher';

/** The service's cipher, counting its calls (each is a KMS call deployed). */
function countingCipher() {
  const inner = new AesGcmSecretCipher(randomBytes(32));
  const calls = { seal: 0, open: 0 };
  const cipher: SecretCipher = {
    seal: (plaintext, context) => {
      calls.seal++;
      return inner.seal(plaintext, context);
    },
    open: (sealed, context) => {
      calls.open++;
      return inner.open(sealed, context);
    },
  };
  return { cipher, calls };
}

const credentialed = {
  url: 'https://a.test/dashboard?session=url-secret#also-url-secret',
  js: "localStorage.setItem('token', 'script-secret')",
  width: 800,
  headers: { Authorization: 'Bearer very-secret' },
  cookies: [{ name: 'session', value: 'also-secret' }],
};
const job = (id: string, request: Record<string, unknown>, accountId = 'acct-a') => ({
  id,
  accountId,
  request,
});

describe("a queued request's credentials", () => {
  it('are sealed with one call to the cipher for the whole intake, and open back to the request as accepted', async () => {
    const { cipher, calls } = countingCipher();
    const plain = { html: '<p>Our own document</p>', width: 600 };
    const sealed = await sealCredentials(cipher, [
      job('job_1', credentialed),
      job('job_2', plain),
      job('job_3', credentialed),
    ]);
    expect(calls.seal).toBe(1);
    expect(JSON.stringify(sealed)).not.toMatch(
      /very-secret|also-secret|Authorization|url-secret|script-secret|a\.test/,
    );
    expect(sealed[0]?.request).toEqual({ width: 800, sealedCredentials: expect.any(Object) });
    expect(sealed[1]?.request).toBe(plain);
    for (const one of sealed)
      expect(await openCredentials(cipher, one)).toEqual(one.id === 'job_2' ? plain : credentialed);
  });

  it('cost nothing for an intake without any (an html document, kept as sent with its script)', async () => {
    const { cipher, calls } = countingCipher();
    const document = { html: '<p>Our own document</p>', js: 'document.body.dataset.ready = 1' };
    const jobs = [job('job_1', document)];
    expect(await sealCredentials(cipher, jobs)).toBe(jobs);
    expect(await openCredentials(cipher, jobs[0] as never)).toEqual(document);
    expect(calls).toEqual({ seal: 0, open: 0 });
  });

  it("do not open on another job, or on another account's job", async () => {
    const { cipher } = countingCipher();
    const [sealed] = await sealCredentials(cipher, [job('job_1', credentialed)]);
    const request = sealed?.request ?? {};
    await expect(openCredentials(cipher, job('job_2', request))).rejects.toThrow(CredentialsNotOpenedError);
    await expect(openCredentials(cipher, job('job_1', request, 'acct-b'))).rejects.toThrow(
      CredentialsNotOpenedError,
    );
  });
});
