import {
  type captureOptionFields,
  FORBIDDEN_HEADERS,
  MAX_COOKIE_SIZE,
  MAX_HEADER_VALUE_LENGTH,
  MAX_HEADERS,
  MAX_INJECTED_BYTES,
  NETWORK_IDLE_MS,
} from '../screenshot/optionFields';

const KIB = MAX_INJECTED_BYTES / 1024;

/** Descriptions of the capture options in the API description; keyed by the schema's fields so a rename does not compile. */
export const CAPTURE_OPTION_DESCRIPTIONS: Record<keyof typeof captureOptionFields, string> = {
  selector:
    'Capture only the first element matching this CSS selector (its border box, scrolled into view). No match once ' +
    'the page is ready: 500 naming the selector, nothing charged. Not with fullPage',
  scale: 'Device pixel ratio: the image is width × scale by height × scale pixels',
  darkMode: 'Emulate prefers-color-scheme: dark',
  reducedMotion: 'Emulate prefers-reduced-motion: reduce',
  waitUntil: `What navigation waits for; networkidle: no request for ${NETWORK_IDLE_MS} ms`,
  waitForSelector:
    'After the delay, wait until an element matching this CSS selector is visible; not within the time budget: 500',
  userAgent: 'Overrides the device or default user agent',
  headers:
    `Extra request headers, sent only to the origin of url (never to other origins or redirects elsewhere). At most ` +
    `${MAX_HEADERS}; names are RFC 7230 tokens, values at most ${MAX_HEADER_VALUE_LENGTH} printable ASCII ` +
    `characters; not ${FORBIDDEN_HEADERS.join(', ')} or proxy-*`,
  cookies:
    `Host-only cookies for the host of url, set before navigation; path defaults to /. name and value together at ` +
    `most ${MAX_COOKIE_SIZE} characters; sameSite None needs secure; names starting __Secure-, __Host- or __Http- ` +
    '(any case) need secure (so an https url), __Host- also the path /, __Http- also httpOnly',
  timezone: "The page's IANA time zone, e.g. Europe/Paris",
  locale:
    'BCP 47 tag for navigator.language and Accept-Language, e.g. de-DE; it must name a language (not und). ' +
    'Without it pages see en-US (Accept-Language: en-US,en;q=0.9)',
  css: `A style sheet added after load (at most ${KIB} KiB of UTF-8)`,
  js:
    `A script run in the page after load, before delay (at most ${KIB} KiB of UTF-8). Its errors do not fail the ` +
    'capture; it is held to the same egress rules as the page',
  hideSelectors: 'Elements matching any of these CSS selectors are hidden (visibility: hidden)',
  blockAds:
    'Block ads and trackers: requests the shipped filter lists match never leave the browser, and elements they ' +
    'name are hidden',
  blockCookieBanners:
    'Dismiss cookie-consent banners and dialogs (refusing where the page allows) or hide them, with the consent ' +
    'rules shipped with the project, in every frame',
  blockChats:
    'Block and hide chat and support widgets (Intercom, Drift, Zendesk, Crisp, HubSpot, Tawk.to, LiveChat and the ' +
    "like) with the annoyance list shipped with the project (Fanboy's Anti-Chat List)",
  click:
    'After load and the injected css and js, before delay: the first element matching this CSS selector is ' +
    'scrolled into view and clicked. No match: 500 naming the selector, nothing charged',
  failOnHttpError:
    "When true, a main document answering 4xx or 5xx fails the capture: 500 with the page's status in the " +
    'message, nothing charged',
};
