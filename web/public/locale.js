// uPlot reads navigator.language into an Intl.NumberFormat as it loads, and Chromium on Linux under a POSIX locale
// reports tags such as "en-US@posix" that Intl refuses (a known uPlot bug, still in the pinned release): the chart
// library would then fail to load. Where the browser's tag is not valid BCP 47, this page sees its valid part.
const isValidTag = (tag) => {
  try {
    Intl.getCanonicalLocales(tag);
    return true;
  } catch {
    return false;
  }
};

const reported = navigator.language;
if (!isValidTag(reported)) {
  const base = reported.split(/[@.]/)[0]?.replaceAll('_', '-') ?? '';
  Object.defineProperty(navigator, 'language', {
    value: isValidTag(base) ? base : 'en-US',
    configurable: true,
  });
}
