import { ValidationError } from '../errors';

/**
 * Fields a signed link may not carry: a link is public (an `<img>` tag shows it to anyone), and a document given as
 * `html` is neither something a link could hold nor something to hand out.
 */
export const SIGNED_LINK_REFUSED_FIELDS = ['html'] as const;

/** The request of a signed link, or a ValidationError (400) naming each field a link may not carry. */
export function refuseSignedLinkFields(request: unknown): unknown {
  if (request === null || typeof request !== 'object') return request;
  const refused = SIGNED_LINK_REFUSED_FIELDS.filter((field) => field in request);
  if (refused.length > 0) {
    throw new ValidationError(
      refused.map((field) => ({
        code: 'not_allowed_on_signed_link',
        path: [field],
        message: `${field} cannot be used in a signed link; send it with POST /api/screenshot`,
      })),
      'Invalid request body',
    );
  }
  return request;
}
