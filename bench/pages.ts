import { readFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import sharp from 'sharp';
import { type PageServer, startPageServer } from '../test/helpers/pageServer';

/**
 * The pages every scenario captures, served on 127.0.0.1. `no-store` everywhere: a reused tab (the floor, and
 * the alternatives) must not answer from a cache that our fresh incognito context never has, or the comparison
 * would favour them.
 */
export interface BenchPages {
  server: PageServer;
  /** The simple page: HTML, one stylesheet and one image (three requests, as a small real page makes). */
  simple: string;
  /** A 15,000 px tall page for the full-page scenario. */
  tall: string;
  /** A page of text in every script of the font set, and emoji, filling 1920x1080. */
  text: string;
  /** A 15,000 px tall page of lazy images (native loading="lazy" and lazysizes) for the full-page lazy scenario. */
  lazy: string;
  close(): Promise<void>;
}

const TALL_PAGE_HEIGHT = 15_000;

const require = createRequire(import.meta.url);

const SIMPLE_HTML = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Bench page</title>
<link rel="stylesheet" href="/style.css"></head><body>
<header><h1>Acme Widgets</h1><nav><a href="#">Products</a> <a href="#">Pricing</a> <a href="#">About</a></nav></header>
<main><section class="hero"><img src="/hero.png" width="480" height="240" alt="">
<div><h2>Widgets that just work</h2><p>Fast, small and dependable. Ships in a day, lasts for years.</p>
<a class="button" href="#">Start free trial</a></div></section>
<section class="cards">${[1, 2, 3]
  .map(
    (n) =>
      `<article><h3>Feature ${n}</h3><p>A short paragraph of text that explains feature ${n} in one or two lines.</p></article>`,
  )
  .join('')}</section></main><footer>&copy; Acme</footer></body></html>`;

const SIMPLE_CSS = `body{margin:0;font:16px/1.5 sans-serif;color:#1d2330;background:#f6f7fb}
header{display:flex;justify-content:space-between;align-items:center;padding:16px 48px;background:#1d2330;color:#fff}
header a{color:#cfd6e6;margin-left:16px;text-decoration:none}main{padding:48px}
.hero{display:flex;gap:48px;align-items:center}.button{display:inline-block;padding:12px 24px;border-radius:6px;background:#3355ff;color:#fff;text-decoration:none}
.cards{display:grid;grid-template-columns:repeat(3,1fr);gap:24px;margin-top:48px}
article{background:#fff;border-radius:8px;padding:24px;box-shadow:0 1px 3px rgba(0,0,0,.15)}footer{padding:24px 48px;color:#667}`;

const TALL_HTML = `<!doctype html><html><head><meta charset="utf-8"><style>html,body{margin:0}
div{height:1000px;font:48px sans-serif;padding:24px;box-sizing:border-box}</style></head><body>${Array.from(
  { length: TALL_PAGE_HEIGHT / 1000 },
  (_, i) => `<div style="background:hsl(${i * 24} 60% 70%)">Section ${i + 1}</div>`,
).join('')}</body></html>`;

/** A sentence or two per script, each repeated into a paragraph. */
const SCRIPT_SAMPLES: { lang: string; text: string; dir?: 'rtl' }[] = [
  { lang: 'en', text: 'The quick brown fox jumps over the lazy dog, and the dog does not mind at all.' },
  { lang: 'el', text: 'Η γρήγορη καφετιά αλεπού πηδά πάνω από τον τεμπέλη σκύλο.' },
  { lang: 'ru', text: 'Съешь же ещё этих мягких французских булок да выпей чаю.' },
  { lang: 'zh-CN', text: '敏捷的棕色狐狸跳过了那只懒狗，这是一个用于测试字体的句子。' },
  { lang: 'zh-TW', text: '敏捷的棕色狐狸跳過了那隻懶狗，這是一個用於測試字體的句子。' },
  {
    lang: 'ja',
    text: 'いろはにほへと ちりぬるを わかよたれそ つねならむ。素早い茶色の狐が怠け者の犬を飛び越える。',
  },
  { lang: 'ko', text: '다람쥐 헌 쳇바퀴에 타고파. 날쌘 갈색 여우가 게으른 개를 뛰어넘는다.' },
  { lang: 'ar', text: 'نص حكيم له سر قاطع وذو شأن عظيم مكتوب على ثوب أخضر ومغلف بجلد أزرق.', dir: 'rtl' },
  { lang: 'he', text: 'דג סקרן שט בים מאוכזב ולפתע מצא לו חברה נאה.', dir: 'rtl' },
  { lang: 'hi', text: 'ऋषियों को सताने वाले दुष्ट राक्षसों के राजा रावण का सर्वनाश करने वाले विष्णुवतार भगवान श्रीराम।' },
  { lang: 'bn', text: 'আমার সোনার বাংলা, আমি তোমায় ভালোবাসি। চিরদিন তোমার আকাশ, তোমার বাতাস।' },
  { lang: 'ta', text: 'யாமறிந்த மொழிகளிலே தமிழ்மொழி போல் இனிதாவது எங்கும் காணோம்.' },
  { lang: 'th', text: 'เป็นมนุษย์สุดประเสริฐเลิศคุณค่า กว่าบรรดาฝูงสัตว์เดรัจฉาน' },
  { lang: 'en', text: 'Emoji 😀 🎉 👍 ❤️ 🇯🇵 👩‍💻 🐱 🚀 🌍 ☕ and more 😎 🙌 🔥 ✨ 🍕' },
];

const TEXT_HTML = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Every script</title><style>
body{margin:0;padding:24px 48px;font:15px/1.45 sans-serif;color:#1d2330;background:#fff}
h1{font:bold 28px serif;margin:0 0 12px}main{columns:3;column-gap:40px}p{margin:0 0 10px}
code{font:14px monospace}</style></head><body><h1>Every script the service draws</h1><main>${SCRIPT_SAMPLES.map(
  ({ lang, text, dir }) =>
    `<p lang="${lang}"${dir ? ` dir="${dir}"` : ''}>${Array.from({ length: 3 }, () => text).join(' ')}</p>`,
).join('')}<p><code>const answer = 42; // monospace</code></p></main></body></html>`;
/** Fifteen 1000 px sections, each with a 400 px image loaded lazily: natively in even sections, by lazysizes in odd. */
const LAZY_HTML = `<!doctype html><html><head><meta charset="utf-8"><script src="/lazysizes.js" async></script>
<style>html,body{margin:0}section{height:1000px;padding:24px;box-sizing:border-box}</style></head><body>${Array.from(
  { length: TALL_PAGE_HEIGHT / 1000 },
  (_, i) =>
    `<section>${
      i % 2 === 0
        ? `<img src="/hero.png?${i}" loading="lazy" width="480" height="240" alt="">`
        : `<img data-src="/hero.png?${i}" class="lazyload" width="480" height="240" alt="">`
    }</section>`,
).join('')}</body></html>`;

function serve(type: string, body: string | Buffer) {
  return (_req: unknown, res: ServerResponse) => {
    res
      .writeHead(200, {
        'Content-Type': type,
        'Content-Length': Buffer.byteLength(body),
        'Cache-Control': 'no-store',
      })
      .end(body);
  };
}

export async function startBenchPages(): Promise<BenchPages> {
  const hero = await sharp(
    Buffer.from(
      '<svg xmlns="http://www.w3.org/2000/svg" width="480" height="240"><defs><linearGradient id="g"><stop offset="0" stop-color="#3355ff"/><stop offset="1" stop-color="#ff7755"/></linearGradient></defs><rect width="480" height="240" fill="url(#g)"/><circle cx="360" cy="120" r="80" fill="#fff" fill-opacity=".5"/></svg>',
    ),
  )
    .png()
    .toBuffer();
  const server = await startPageServer({
    '/simple': serve('text/html; charset=utf-8', SIMPLE_HTML),
    '/style.css': serve('text/css', SIMPLE_CSS),
    '/hero.png': serve('image/png', hero),
    '/tall': serve('text/html; charset=utf-8', TALL_HTML),
    '/text': serve('text/html; charset=utf-8', TEXT_HTML),
    '/lazy': serve('text/html; charset=utf-8', LAZY_HTML),
    '/lazysizes.js': serve('text/javascript', await readFile(require.resolve('lazysizes/lazysizes.js'))),
  });
  return {
    server,
    simple: `${server.origin}/simple`,
    tall: `${server.origin}/tall`,
    text: `${server.origin}/text`,
    lazy: `${server.origin}/lazy`,
    close: () => server.close(),
  };
}
