import type { Page } from 'puppeteer-core';
import { isolatedRealmOf } from './pageScripts';

/** What a capture without `locale` or `timezone` gets, as browserIdentity.ts and the page's emulation do. */
const DEFAULT_LOCALE = 'en-US';
const DEFAULT_TIMEZONE = 'UTC';

/** The class the elements we date take in place of `date`, which Chromium would fill again. */
const DATED_CLASS = 'screenshot-api-date';

/**
 * A header or footer template whose `date` elements hold the date as Chromium writes it (a short date and time, in
 * the page's time zone), in the capture's `locale`: Chromium writes it in US English whatever the page's. Each
 * element of class `date` gets the text and takes another class in its place, which the template's style sheets
 * name instead, so that Chromium leaves it and its styling stays. The template is parsed in our isolated world, whose
 * DOMParser the page cannot replace and which runs none of the template's scripts; a template without such an
 * element is left as it came.
 */
export async function withLocalDates(
  page: Page,
  template: string,
  spec: { locale?: string; timezone?: string },
): Promise<string> {
  if (!template.includes('date')) return template;
  const date = new Intl.DateTimeFormat(spec.locale ?? DEFAULT_LOCALE, {
    dateStyle: 'short',
    timeStyle: 'short',
    timeZone: spec.timezone ?? DEFAULT_TIMEZONE,
  }).format(new Date());
  return isolatedRealmOf(page.mainFrame()).evaluate(`(() => {
    const html = ${JSON.stringify(template)};
    // In no-quirks mode, as Chromium's template page: class names match case-sensitively (\`Date\` is not \`date\`).
    const doc = new DOMParser().parseFromString('<!doctype html>' + html, 'text/html');
    const dated = [...doc.getElementsByClassName('date')];
    if (dated.length === 0) return html;
    for (const element of dated) {
      element.classList.replace('date', ${JSON.stringify(DATED_CLASS)});
      element.textContent = ${JSON.stringify(date)};
    }
    for (const sheet of doc.querySelectorAll('style')) {
      sheet.textContent = sheet.textContent.replace(/\\.date(?![\\w-])/g, ${JSON.stringify(`.${DATED_CLASS}`)});
    }
    return doc.head.innerHTML + doc.body.innerHTML;
  })()`) as Promise<string>;
}
