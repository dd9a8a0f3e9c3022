import type { PageHandler } from './pageServer';

/**
 * Pages for content captures (Markdown, HTML, metadata): an article with navigation, an ad slot, a table and code; a
 * page with no article; a page with Open Graph and Twitter tags reached through a redirect.
 */

const paragraph = (topic: string) =>
  `<p>${`The ${topic} is described here in enough words for a reader to follow it from start to end, with details that matter. `.repeat(4)}</p>`;

export const ARTICLE_HEADING = 'Tides of the Northern Sea';

export const ARTICLE_PAGE = `<!DOCTYPE html><html lang="en"><head><title>${ARTICLE_HEADING} | Coast Weekly</title></head><body>
<nav class="site-nav"><a href="/home">Home navigation link</a> <a href="/sections">Sections navigation link</a></nav>
<div class="ad-banner sponsor">Buy cheap sponsored widgets now</div>
<main><article>
<h1>${ARTICLE_HEADING}</h1>
${paragraph('tide')}
${paragraph('moon')}
<h2>Measured heights</h2>
<table><thead><tr><th>Harbour</th><th>Height (m)</th></tr></thead>
<tbody><tr><td>Bergen</td><td>1.4</td></tr><tr><td>Aberdeen</td><td>3.7</td></tr></tbody></table>
${paragraph('harbour')}
<pre><code class="language-js">const high = tide.max();</code></pre>
<p>Read the <a href="/archive/tides">tide archive</a> for more.</p>
${paragraph('current')}
</article></main>
<footer>Copyright footer text</footer>
<script>document.querySelector('article').insertAdjacentHTML('beforeend', '<p>Added by a script after load.</p>')</script>
</body></html>`;

export const NO_ARTICLE_PAGE = `<!DOCTYPE html><html><head><title>Tiny</title></head><body><div>Just one short line of text.</div></body></html>`;

export const METADATA_PAGE = `<!DOCTYPE html><html lang="fr-CA"><head>
<title>Card title</title>
<meta name="description" content="A page that describes itself">
<link rel="canonical" href="/canonical/page">
<link rel="icon" href="/static/icon.png">
<meta property="og:title" content="OG title">
<meta property="og:image" content="https://cdn.example/card.png">
<meta name="twitter:card" content="summary_large_image">
<meta name="twitter:site" content="@coast">
</head><body><p>Described.</p></body></html>`;

/** The routes of these pages: `/article`, `/no-article`, `/meta` and `/moved` (a 301 to `/meta`). */
export const ARTICLE_ROUTES: Record<string, string | PageHandler> = {
  '/article': ARTICLE_PAGE,
  '/no-article': NO_ARTICLE_PAGE,
  '/meta': METADATA_PAGE,
  '/moved': (_, res) => {
    res.writeHead(301, { Location: '/meta' }).end();
  },
};
