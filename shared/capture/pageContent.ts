import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { withinMetadataBudget } from './metadataBudget';
import type { IsolatedWorld } from './pageScripts';
import {
  type ContentFormat,
  MAX_METADATA_PROPERTIES,
  MAX_METADATA_TEXT,
  type PageMetadata,
} from './renderer';

/**
 * The page's content as text (`format: "markdown"` or `"html"`) and its metadata (`metadata: true`), read in our
 * isolated world (pageControl.ts), so nothing the page defines or replaces reaches the code that reads it.
 *
 * Markdown is Mozilla Readability's main content (the whole body when it finds none), converted by Turndown with the
 * GFM plugin (tables, strikethrough, fenced code). Both run in the page's isolated world on a clone of the rendered
 * document: what scripts and the chosen blocking left is what is read, and the live page is never changed. The
 * libraries ship as files of their npm packages (copied beside the renderer's bundle, infra/captureAssets.ts) and are
 * evaluated only for a content capture: image captures never load them.
 */

/** Package files of the libraries, as Node resolves them (the browser builds: no `require`, no Node globals). */
export const CONTENT_LIBRARY_FILES = [
  '@mozilla/readability/Readability.js',
  'turndown/lib/turndown.browser.umd.js',
  'turndown-plugin-gfm/dist/turndown-plugin-gfm.js',
] as const;

let librarySource: Promise<string> | undefined;

/** The three libraries as one source text that leaves `Readability`, `TurndownService` and `turndownPluginGfm` in scope. */
function libraries(): Promise<string> {
  librarySource ??= (async () => {
    const require = createRequire(import.meta.url);
    const [readability, turndown, gfm] = await Promise.all(
      CONTENT_LIBRARY_FILES.map((file) => readFile(require.resolve(file), 'utf8')),
    );
    // Each UMD or CommonJS file assigns module.exports when `module` exists; the GFM plugin declares its own var.
    return `const Readability = (() => { const module = { exports: {} }; ${readability}\n; return module.exports; })();
const TurndownService = (() => { const module = { exports: {} }; const exports = module.exports; ${turndown}\n; return module.exports; })();
const turndownPluginGfm = (() => { ${gfm}\n; return turndownPluginGfm; })();`;
  })();
  librarySource.catch(() => {
    librarySource = undefined;
  });
  return librarySource;
}

/**
 * A copy of the document without what the page does not show, for Markdown: elements not rendered (display,
 * content-visibility, as checkVisibility judges them: so also what the capture hid, ads, banners, chats,
 * hideSelectors), text drawn at size 0 or with a visibility other than visible, and content an element does not draw. A hostile page used them to slip an agent instructions nobody sees (red
 * team). Not left out, on purpose: transparent, off-page and "screen reader only" text, and opacity 0, which real
 * pages use for gradient headings, accessible labels and content that fades in as it is scrolled to; a page can hide
 * text from people in more ways than any reader can tell, so Markdown is never a guard against prompt injection
 * (docs/api.md 17.1). The live page and its copy are walked side by side, so every copied node is judged by its
 * rendered twin. A cloned document has no shadow roots: the children of each host with an open one are replaced by
 * what it draws, its shadow tree with each slot filled by what is assigned to it, judged the same way (web components
 * keep their text there; red team: such a page gave empty Markdown). Closed shadow roots cannot be read.
 */
const SEEN_COPY = `const seenCopy = () => {
  const copy = document.cloneNode(true);
  if (!document.body || !copy.body) return copy;
  // What the style of a text's element does to it: size 0, contents skipped, or visibility other than visible
  // (inherited, so text a page leaves in a hidden element whose shown parts set visible again; red team).
  const styleHides = new Map();
  const hidesText = (parent) => {
    if (!styleHides.has(parent)) {
      const style = getComputedStyle(parent);
      styleHides.set(
        parent,
        parseFloat(style.fontSize) === 0 || style.contentVisibility === 'hidden' || style.visibility !== 'visible',
      );
    }
    return styleHides.get(parent);
  };
  // What an element does not render (red team): the fallback of a canvas, video, meter or progress element has no
  // boxes; a closed details element lays out its contents but skips drawing them, but its summary; SVG definitions
  // and descriptions are drawn only where used, or never. White space says nothing: kept.
  const range = document.createRange();
  const undrawn = 'defs, symbol, clipPath, mask, pattern, marker, linearGradient, radialGradient, filter, title, desc, metadata';
  const inClosedDetails = (element) => {
    const details = element.closest('details:not([open])');
    const summary = details && details.querySelector(':scope > summary');
    return details !== null && !(summary && summary.contains(element));
  };
  const unseenText = (text) => {
    if (!text.data.trim()) return false;
    const parent = text.parentElement;
    if (!parent || hidesText(parent) || inClosedDetails(parent)) return true;
    if (parent instanceof SVGElement && parent.closest(undrawn)) return true;
    range.selectNodeContents(text);
    return range.getClientRects().length === 0;
  };
  // An element of display: contents has no box, so checkVisibility calls it hidden, yet its children are drawn: each
  // of them is judged itself. An element hidden by visibility keeps its children, which may set it back, each judged;
  // one without any (an image) goes.
  const unseenElement = (element) => {
    const style = getComputedStyle(element);
    if (style.display === 'contents') return false;
    return !element.checkVisibility() || (style.visibility !== 'visible' && element.childElementCount === 0);
  };
  const unseen = (node) => (node.nodeType === Node.TEXT_NODE ? unseenText(node) : unseenElement(node));
  // What a shadow host draws, as nodes of the copy: without a stack of calls, as a page's tree may be deep.
  const composed = (host) => {
    const drawn = copy.createDocumentFragment();
    const pending = [[host, drawn]];
    while (pending.length > 0) {
      const [from, into] = pending.pop();
      const children = from.shadowRoot
        ? from.shadowRoot.childNodes
        : from.localName === 'slot' && from.getRootNode() instanceof ShadowRoot
          ? from.assignedNodes({ flatten: true })
          : from.childNodes;
      for (const child of children) {
        const drawnHere = (child.nodeType === Node.TEXT_NODE || child.nodeType === Node.ELEMENT_NODE) && !unseen(child);
        if (!drawnHere) continue;
        const twin = copy.importNode(child, false);
        into.append(twin);
        if (child.nodeType === Node.ELEMENT_NODE) pending.push([child, twin]);
      }
    }
    return drawn;
  };
  const shown = NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT;
  const live = document.createTreeWalker(document.body, shown);
  const copied = copy.createTreeWalker(copy.body, shown);
  const dropped = [];
  const hosts = [];
  for (let node = live.nextNode(), twin = copied.nextNode(); node && twin; node = live.nextNode(), twin = copied.nextNode()) {
    if (unseen(node)) dropped.push(twin);
    else {
      if (node.shadowRoot) hosts.push([node, twin]);
      // Judged here, text by text: Readability would drop an element whose own style says hidden, with the children
      // that set it back (red team).
      if (twin.nodeType === Node.ELEMENT_NODE && twin.style && twin.style.visibility) twin.style.removeProperty('visibility');
    }
  }
  for (const twin of dropped) twin.remove();
  // A button's words are the page's (an accordion's questions); Readability removes buttons whole (red team).
  for (const button of copy.body.querySelectorAll('button')) {
    const words = copy.createElement('span');
    words.append(...button.childNodes);
    button.replaceWith(words);
  }
  // In document order: a host inside another one's light tree went with it, and the outer one's drawing has it.
  for (const [host, twin] of hosts) if (twin.isConnected) twin.replaceChildren(composed(host));
  return copy;
};`;

/**
 * Turndown's inline code rule, written as it writes it (a delimiter longer than no run of backticks inside, padded by
 * a space where CommonMark would strip one or the code starts or ends with a backtick) in time linear in the code: its
 * own test of the padding is a regular expression that backtracks quadratically on code that starts with a space and
 * does not end with one, which a `<code>` opening with a `<br>` gives (red team, round 20: a static page of 400,000
 * characters held its renderer 30 s and failed, blamed on scripts it did not have). Source text, for the page's world.
 */
export const INLINE_CODE_RULE = `{
  filter: (node) =>
    node.nodeName === 'CODE' && !(node.parentNode.nodeName === 'PRE' && !node.previousSibling && !node.nextSibling),
  replacement: (content) => {
    if (!content) return '';
    const code = content.replace(/\\r?\\n|\\r/g, ' ');
    const runs = new Set((code.match(/\x60+/g) || []).map((run) => run.length));
    let size = 1;
    while (runs.has(size)) size++;
    const delimiter = '\x60'.repeat(size);
    const padded =
      code.startsWith('\x60') || code.endsWith('\x60') || (code.startsWith(' ') && code.endsWith(' ') && /[^ ]/.test(code));
    const space = padded ? ' ' : '';
    return delimiter + space + code + space + delimiter;
  },
}`;

/**
 * Markdown of the main content. Links and images are made absolute against the document's base URL (Readability does
 * so for its article; the rules below do it for the whole-body fallback too), and kept only to http(s) (and mailto). Scripts, styles and forms say nothing
 * a reader wants. Text a page leaves with lone UTF-16 halves is made well-formed, so strict JSON readers (MCP) take it.
 */
const MARKDOWN = `(() => {
  ${SEEN_COPY}
  // Where a link or an image may point, absolute against the document's base URL, and only to what an agent may
  // follow: a page's javascript: or data: links never reach it (red team: Readability drops only hrefs that begin
  // with exactly "javascript:"). In-page links stay as written: an html document's address is its own data: URL,
  // which every fragment link would otherwise repeat whole (red team). Parentheses, white space and angle brackets
  // are escaped, so a destination cannot end the Markdown link and start another.
  const target = (value, protocols) => {
    const written = value.trim();
    const escaped = (href) => href.replace(/[()<>\\s]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0'));
    if (written.startsWith('#')) return escaped(written);
    try {
      const url = new URL(written, document.baseURI);
      return protocols.includes(url.protocol) ? escaped(url.href) : null;
    } catch {
      return null;
    }
  };
  // Alt text and titles are the page's words inside Markdown syntax: they may not close it (red team: an alt text
  // wrote a javascript: link of its own).
  const plain = (text) => text.replace(/\\s+/g, ' ').replace(/[\\\\\\[\\]()"<&\x60]/g, (c) => '\\\\' + c);
  const turndown = new TurndownService({
    headingStyle: 'atx',
    codeBlockStyle: 'fenced',
    bulletListMarker: '-',
    // What a rule keeps (the GFM plugin keeps a table without a heading row) is written as its Markdown, never as the
    // page's own HTML, which no rule of ours would have read (red team: a live javascript: link and onerror).
    keepReplacement: (content, node) => (node.isBlock ? '\\n\\n' + content + '\\n\\n' : content),
  });
  turndown.use(turndownPluginGfm.gfm);
  // A table is data or layout, judged much as Readability judges its data tables. Data is a GFM table: its first row
  // the heading (GFM needs one), padded to the widest row as cells spanning columns are (GFM drops what passes the
  // heading), each cell one line of its row whatever the page put in it, its pipes escaped (red team, round 23: the
  // plugin's own rule kept a cell's paragraphs, line breaks and lists as lines of their own, which broke the table
  // apart and dropped text). Layout is written as the blocks its cells hold (red team, round 30: a page in a one-cell
  // table became one line; review, session 31: tables of one paragraph a cell, as Word and Google Docs write them, are
  // data). These rules, added after the plugin, are asked before its own; none leaves a table to its keep.
  const SECTIONS = 'h1,h2,h3,h4,h5,h6,pre,blockquote,hr,article,section,aside,nav,header,footer,main,form';
  const widthOf = (row) => Array.prototype.reduce.call(row.cells, (sum, cell) => sum + Math.max(1, cell.colSpan || 1), 0);
  const tables = new WeakMap();
  const tableOf = (table) => {
    if (!tables.has(table)) {
      const rows = Array.from(table.rows);
      const cells = rows.flatMap((row) => Array.from(row.cells));
      const role = (table.getAttribute('role') || '').toLowerCase();
      const headed =
        rows.length > 0 &&
        (rows[0].parentNode.nodeName === 'THEAD' || table.caption !== null || table.querySelector(':scope > colgroup, :scope > col') !== null ||
          cells.some((cell) => cell.nodeName === 'TH'));
      const layout =
        role === 'presentation' || role === 'none' || table.getAttribute('datatable') === '0' ||
        (!headed &&
          (table.querySelector('table') !== null ||
            rows.length < 2 ||
            rows.every((row) => row.cells.length < 2) ||
            cells.some((cell) => cell.querySelector(SECTIONS) !== null)));
      // Folded, not spread: a table of 100,000s of rows passes the arguments a call may take.
      tables.set(table, { layout, width: rows.reduce((widest, row) => Math.max(widest, widthOf(row)), 0) });
    }
    return tables.get(table);
  };
  const ofLayout = (node) => {
    const table = node.closest('table');
    return !table || tableOf(table).layout;
  };
  turndown.addRule('table', {
    filter: 'table',
    replacement: (content) => '\\n\\n' + content + '\\n\\n',
  });
  turndown.addRule('tableCaption', {
    filter: 'caption',
    replacement: (content) => '\\n\\n' + content.trim() + '\\n\\n',
  });
  turndown.addRule('tableRow', {
    filter: 'tr',
    replacement: (content, node) => {
      const table = node.closest('table');
      if (table.rows[0] !== node) return '\\n' + content;
      const { width } = tableOf(table);
      const padding = ' |'.repeat(Math.max(0, width - widthOf(node)));
      return '\\n' + content + padding + '\\n|' + ' --- |'.repeat(width);
    },
  });
  // Lines split, trimmed and joined: a pattern around the newline would backtrack quadratically on a long run of
  // spaces without one (red team, round 30: no-break spaces held a renderer 30 s).
  turndown.addRule('tableCell', {
    filter: ['th', 'td'],
    replacement: (content, node) => {
      const first = node.parentNode.cells[0] === node;
      const line = content.split('\\n').map((part) => part.trim()).filter(Boolean).join(' ');
      return (first ? '| ' : ' ') + line.replace(/\\|/g, '\\\\|') + ' |' + ' |'.repeat(Math.max(1, node.colSpan || 1) - 1);
    },
  });
  // Asked before the four above (Turndown asks the rule added last first).
  turndown.addRule('tableLayout', {
    filter: (node) => ['TABLE', 'CAPTION', 'TR', 'TH', 'TD'].includes(node.nodeName) && ofLayout(node),
    replacement: (content) => '\\n\\n' + content + '\\n\\n',
  });
  // Page text cannot open an autolink, raw HTML or an entity either (red team: text reading <javascript:...> became a
  // link, and "&copy;" a sign).
  const escapeText = turndown.escape.bind(turndown);
  turndown.escape = (text) => escapeText(text).replace(/[<&]/g, (c) => '\\\\' + c);
  // A code block's fence is longer than any run of backticks that could close it: CommonMark closes one on a line
  // indented by up to three spaces, which Turndown's own rule (and the GFM plugin's, a fixed fence) does not count
  // (red team: the lines after such a run became live Markdown, links included).
  const fenced = (code, language) => {
    let size = 3;
    for (const run of code.match(/^ {0,3}\x60{3,}/gm) || []) size = Math.max(size, run.trim().length + 1);
    const fence = '\x60'.repeat(size);
    const named = /^[\\w#+.-]{1,32}$/.test(language) ? language : '';
    return '\\n\\n' + fence + named + '\\n' + code.replace(/\\n$/, '') + '\\n' + fence + '\\n\\n';
  };
  turndown.addRule('codeBlocks', {
    filter: (node) => node.nodeName === 'PRE' && node.firstChild && node.firstChild.nodeName === 'CODE',
    replacement: (content, node) =>
      fenced(node.firstChild.textContent, ((node.firstChild.getAttribute('class') || '').match(/language-(\\S+)/) || [])[1] || ''),
  });
  turndown.addRule('inlineCode', ${INLINE_CODE_RULE});
  turndown.addRule('highlightedCodeBlocks', {
    filter: (node) =>
      node.nodeName === 'DIV' && /highlight-(?:text|source)-[a-z0-9]+/.test(node.className) && node.firstChild && node.firstChild.nodeName === 'PRE',
    replacement: (content, node) =>
      fenced(node.firstChild.textContent, (node.className.match(/highlight-(?:text|source)-([a-z0-9]+)/) || [])[1] || ''),
  });
  // Controls say nothing a reader wants; a form's or a button's text does (red team: a page wrapped in one form gave
  // empty Markdown, an accordion lost its questions).
  turndown.remove(['script', 'style', 'noscript', 'template', 'iframe', 'select', 'textarea']);
  turndown.addRule('links', {
    filter: (node) => node.nodeName === 'A' && node.getAttribute('href'),
    replacement: (content, node) => {
      // A link with nothing shown says nothing: its address alone is not the page's text.
      if (!content.trim()) return '';
      const href = target(node.getAttribute('href'), ['http:', 'https:', 'mailto:']);
      if (!href) return content;
      const title = node.getAttribute('title');
      return '[' + content + '](' + href + (title ? ' "' + plain(title) + '"' : '') + ')';
    },
  });
  turndown.addRule('images', {
    filter: (node) => node.nodeName === 'IMG' && node.getAttribute('src'),
    replacement: (content, node) => {
      const src = target(node.getAttribute('src'), ['http:', 'https:']);
      const alt = plain(node.getAttribute('alt') || '');
      return src ? '![' + alt + '](' + src + ')' : alt;
    },
  });
  const seen = seenCopy();
  // Readability changes the document it reads: the fallback reads the copy as it was.
  // The article as nodes, never as HTML text to parse again: a page that requires Trusted Types refuses that parse in
  // our world too (red team: such pages got no Markdown).
  let article = null;
  try {
    article = new Readability(seen.cloneNode(true), { serializer: (element) => element }).parse();
  } catch {
    // Readability sets innerHTML as it tries again with looser rules (a page of little text): a page that requires
    // Trusted Types refuses that in our world too (session 29: 500). The whole copy is read instead.
  }
  if (article && article.content && article.textContent.trim()) {
    const title = (article.title || '').trim();
    // The title as the page's words too: Readability takes it from metadata nobody sees, entities decoded (red team).
    const heading = title ? '# ' + turndown.escape(title.replace(/\\s+/g, ' ')) + '\\n\\n' : '';
    return (heading + turndown.turndown(article.content)).toWellFormed();
  }
  return seen.body ? turndown.turndown(seen.body).toWellFormed() : '';
})()`;

/**
 * The rendered DOM, as a browser would save it. Blink answers an empty text, where it would throw, for a DOM whose
 * text passes its longest string (an attribute of 10^8 quotes, each written `&quot;`): the root element always
 * writes its tags, so an empty one is such a DOM, and the capture fails as the page's, through the error of our
 * script (red team, round 20: a 200 of the doctype alone, charged).
 */
const HTML = `(() => {
  const doctype = document.doctype ? new XMLSerializer().serializeToString(document.doctype) + '\\n' : '';
  const html = document.documentElement.outerHTML;
  if (!html) throw new Error('The document is too large to serialise');
  return doctype + html;
})()`;

/** What the document's head says about the page; the navigation adds finalUrl and statusCode. */
const METADATA = `(() => {
  // Cut between whole characters, and with no lone UTF-16 half the page left: strict JSON readers refuse the answer.
  const cut = (value, max) => {
    const head = value.slice(0, max);
    return (/[\\uD800-\\uDBFF]$/.test(head) ? head.slice(0, -1) : head).toWellFormed();
  };
  const text = (value) => {
    const trimmed = typeof value === 'string' ? value.trim() : '';
    return trimmed ? cut(trimmed, ${MAX_METADATA_TEXT}) : null;
  };
  const content = (selector) => {
    const element = document.querySelector(selector);
    return element ? text(element.getAttribute('content')) : null;
  };
  // A link's address only where it can be what the field says: a page address over http(s), an icon also inline as
  // a data: image. A page's javascript: or data:text/html links never reach a field a customer may render as a link
  // or an image (red team).
  const web = (href) => /^https?:/i.test(href);
  const link = (selector, accepts) => {
    const element = document.querySelector(selector);
    return element && element.href && accepts(element.href) ? text(element.href) : null;
  };
  const icon = (href) => web(href) || href.toLowerCase().startsWith('data:image/');
  // Open Graph and Twitter properties that hold an address, which link previews render as a link, an image or a
  // player: as the page wrote them (relative ones too), but only where a browser would read them as web addresses
  // (or inline images), not javascript: or data:text/html (red team, round 18). Known by the shape of their key, not
  // by a list of names (red team, round 20: see_also, logo, video:embed_url, image0 and app:url:iphone passed): a
  // last part that ends in url or names a medium, a player or a logo, numbered or not. An app's own link
  // (twitter:app:url:iphone) is its app's address, any scheme but those a browser runs or shows inline.
  const ADDRESS_PART = /^(?:[a-z_]*url|image|video|audio|player|stream|src|logo|see_also)\\d*$/;
  const appLink = (href) => !/^(?:javascript|vbscript|data|blob|file|filesystem):/i.test(href);
  const addressRule = (key) => {
    const parts = key.split(':');
    if (parts.slice(0, -1).includes('url')) return appLink;
    if (!ADDRESS_PART.test(parts[parts.length - 1])) return null;
    return /^(image|video|audio|logo)/.test(key) ? icon : web;
  };
  const safeAddress = (value, accepts) => {
    let absolute;
    try {
      absolute = new URL(value);
    } catch {
      // No scheme of its own: relative to the page, which is on the web.
      return true;
    }
    return accepts(absolute.href);
  };
  const properties = (prefix) => {
    const found = {};
    let count = 0;
    for (const element of document.querySelectorAll('meta[property], meta[name]')) {
      const name = (element.getAttribute('property') || element.getAttribute('name') || '').trim().toLowerCase();
      if (!name.startsWith(prefix) || name.length === prefix.length) continue;
      const key = cut(name.slice(prefix.length), 128);
      const value = text(element.getAttribute('content'));
      if (value === null || Object.prototype.hasOwnProperty.call(found, key)) continue;
      const accepts = addressRule(key);
      if (accepts && !safeAddress(value, accepts)) continue;
      if (++count > ${MAX_METADATA_PROPERTIES}) break;
      found[key] = value;
    }
    return found;
  };
  return {
    title: text(document.title),
    description: content('meta[name="description" i]'),
    lang: text(document.documentElement.getAttribute('lang')),
    canonicalUrl: link('link[rel~="canonical" i][href]', web),
    favicon: link('link[rel~="icon" i][href]', icon) || link('link[rel~="apple-touch-icon" i][href]', icon),
    openGraph: properties('og:'),
    twitter: properties('twitter:'),
  };
})()`;

export async function pageContent(world: IsolatedWorld, format: ContentFormat): Promise<string> {
  if (format === 'html') return world.evaluate<string>(HTML);
  return world.evaluate<string>(`(() => { ${await libraries()}\nreturn ${MARKDOWN}; })()`);
}

export async function pageMetadata(
  world: IsolatedWorld,
  navigation: { finalUrl: string | null; statusCode: number | null },
): Promise<PageMetadata> {
  const head = await world.evaluate<Omit<PageMetadata, 'finalUrl' | 'statusCode'>>(METADATA);
  return withinMetadataBudget({ ...head, finalUrl: navigation.finalUrl, statusCode: navigation.statusCode });
}
