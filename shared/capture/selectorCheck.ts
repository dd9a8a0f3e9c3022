import { ValidationError } from '../errors';
import type { PageControl } from './pageControl';
import type { CaptureSpec } from './renderer';

/**
 * The request's CSS selectors, read by the browser's own parser before the page is loaded: what Chromium accepts
 * is exactly what it will match with (`:has()`, `:is()`, `:nth-child(2 of .x)`, escapes), and a selector it refuses
 * is the request's fault, answered 400 naming the field instead of failing the capture. `hideSelectors` go into a
 * style sheet, so each must also be a rule's whole selector there: one ending in an open comment or string parses
 * alone, and in the sheet swallowed the rules after it, `css` among them (red team, round 31). The capture's fresh
 * page is still blank, so no page script is there to interfere; a request without selectors sends nothing.
 */
export async function assertSelectorsParse(control: PageControl, spec: CaptureSpec): Promise<void> {
  const fields = selectorFields(spec);
  if (fields.length === 0) return;
  // Parsed against an empty fragment: nothing to match, so the cost is the parse alone.
  const refused = await control.evaluate<number[]>(`(() => {
    const fragment = document.createDocumentFragment();
    return ${JSON.stringify(fields.map(({ selector, inSheet }) => ({ selector, inSheet })))}.flatMap(
      ({ selector, inSheet }, index) => {
        try {
          fragment.querySelector(selector);
          if (inSheet) new CSSStyleSheet().insertRule(selector + ${JSON.stringify(hidingRule(''))});
          return [];
        } catch {
          return [index];
        }
      },
    );
  })()`);
  if (refused.length === 0) return;
  throw new ValidationError(
    refused.flatMap((index) => {
      const field = fields[index];
      return field
        ? [
            {
              code: 'invalid_selector',
              path: field.path,
              message: `${field.name} is not a valid CSS selector`,
            },
          ]
        : [];
    }),
    'Invalid request body',
  );
}

/** Every selector of the request, with where it is in the body. */
function selectorFields(spec: CaptureSpec) {
  const single = (['selector', 'waitForSelector', 'click'] as const).flatMap((name) => {
    const selector = spec[name];
    return selector === undefined ? [] : [{ name, path: [name], selector, inSheet: false }];
  });
  const hidden = spec.hideSelectors.map((selector, index) => ({
    name: `hideSelectors[${index}]`,
    path: ['hideSelectors', index],
    selector,
    inSheet: true,
  }));
  return [...single, ...hidden];
}

/** The rule that hides what `selector` matches, in the style sheet a capture adds (pageOptions.ts). */
export function hidingRule(selector: string): string {
  return `${selector}{visibility:hidden !important}`;
}
