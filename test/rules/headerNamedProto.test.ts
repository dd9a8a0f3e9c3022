import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../shared/errors';
import { captureSpecOf } from '../../shared/screenshot/captureSpec';
import { screenshotRequest } from '../../shared/screenshot/schema';
import { validate } from '../../shared/validation';

/**
 * Red team (round 20): `"headers": {"__proto__": "x", "X-A": "1"}` was accepted and charged, but the page got X-A
 * only: zod's records leave an own `__proto__` entry out of their output. Fixed: the entry is refused by name, a 400
 * whose detail is at headers.__proto__ (`shared/screenshot/optionFields.ts`); `constructor` and `prototype` are kept.
 */
const parsedBody = (text: string) => validate(screenshotRequest, JSON.parse(text));

describe('a headers entry named __proto__', () => {
  it('is refused with a detail naming it', () => {
    let refused: unknown;
    try {
      parsedBody('{"url":"https://a.test/","headers":{"__proto__":"x","X-A":"1"}}');
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(ValidationError);
    expect((refused as ValidationError).details).toEqual([
      expect.objectContaining({ code: 'custom', path: ['headers', '__proto__'] }),
    ]);
  });

  it('leaves other names that objects know, which are sent', () => {
    const spec = captureSpecOf(
      parsedBody('{"url":"https://a.test/","headers":{"constructor":"c","prototype":"p","X-A":"1"}}'),
    );
    expect(spec.headers).toEqual({ constructor: 'c', prototype: 'p', 'X-A': '1' });
  });
});
