// capture-website (benchmark only) depends on full puppeteer, whose install step would download a browser.
// We never use that browser: every run points at the @sparticuz/chromium binary.
module.exports = { skipDownload: true };
