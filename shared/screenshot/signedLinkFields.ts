import { ValidationError } from '../errors';
import { problemsOf } from '../validation';
import { screenshotRequest } from './schema';

/**
 * Fields a signed link refuses (400 naming the field). A link is public: it ends up in `<img>` tags, pages, logs and
 * browser histories, so it must carry no origin credentials (`headers`, `cookies`), nor a document of the caller's
 * (`html`, which a link could not hold anyway). Fields a link cannot honour join this one list as they are added
 * (`async` and its `webhookUrl`: a link answers with the image itself).
 */
export const FIELDS_REFUSED_ON_SIGNED_LINKS: readonly string[] = [
  'headers',
  'cookies',
  'html',
  'async',
  'webhookUrl',
];

/**
 * The request of a signed link, or a ValidationError naming each refused field it carries and every problem of the
 * rest, as a body's 400 lists every problem (red team, round 31: it named the refused field alone, under another
 * `error`, and a link fixed for it failed again on the next problem, each try spending the key's link budget).
 */
export function refuseOnSignedLink(request: unknown): unknown {
  if (request === null || typeof request !== 'object') return request;
  const refused = FIELDS_REFUSED_ON_SIGNED_LINKS.filter((name) => Object.hasOwn(request, name));
  if (refused.length === 0) return request;
  const rest = Object.fromEntries(Object.entries(request).filter(([name]) => !refused.includes(name)));
  // A link that carried `html` in place of `url` is told so once, by its refusal, not again as a link without url.
  const insteadOfUrl = refused.includes('html') && !Object.hasOwn(rest, 'url');
  throw new ValidationError(
    [
      ...refused.map((name) => ({
        code: 'not_allowed_on_signed_link',
        path: [name],
        message: `${name} is not allowed on a signed link (a link is public); send it in a POST with the API key`,
      })),
      ...problemsOf(screenshotRequest, rest).filter(
        (problem) => !(insteadOfUrl && problem.path[0] === 'url'),
      ),
    ],
    'Invalid request body',
  );
}
