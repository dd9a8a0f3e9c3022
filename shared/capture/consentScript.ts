/**
 * autoconsent's content script as we hand it to pages: the package's own bundle, with two edits that change what it
 * costs, not what it does. Each edit checks that the text it expects is there, so a release that changes it fails
 * the tests instead of quietly getting slower or breaking.
 */
export function adaptContentScript(contentScript: string): string {
  return withoutHeuristicPatterns(withoutForcedLayout(contentScript));
}

/**
 * autoconsent adds each hiding rule with `styleEl.innerText += rule`: reading innerText lays the page out, in the
 * middle of parsing it (about 5 ms a capture here). textContent is the same text without the layout.
 */
function withoutForcedLayout(contentScript: string): string {
  const line = 'styleEl.innerText += rule;';
  if (contentScript.split(line).length !== 2) {
    throw new Error(`autoconsent's content script no longer has exactly one "${line}"`);
  }
  return contentScript.replace(line, 'styleEl.textContent += rule;');
}

const PATTERNS_MODULE = '  // lib/heuristic-patterns.ts\n';
const NEXT_MODULE = '  // lib/heuristics.ts\n';

/**
 * The bundle's heuristic-patterns module is some 600 regular expressions (36 KB) that only autoconsent's heuristic
 * modes read, and we run with both off (`heuristicMode: 'off'`, `enableHeuristicDetection: false`). Every frame
 * would still parse and build them: about 3 ms a capture. The module's arrays are declared empty instead; the code
 * that would read them is unchanged and never runs.
 */
function withoutHeuristicPatterns(contentScript: string): string {
  const start = contentScript.indexOf(PATTERNS_MODULE);
  const end = contentScript.indexOf(NEXT_MODULE);
  if (start < 0 || end < start) {
    throw new Error(
      `autoconsent's content script no longer has its heuristic-patterns module where expected`,
    );
  }
  const patterns = contentScript.slice(start, end);
  const names = [...patterns.matchAll(/^ {2}var (\w+) = /gm)].map((match) => match[1]);
  if (names.length === 0 || /^ {2}(function|class|const|let) /m.test(patterns)) {
    throw new Error(`autoconsent's heuristic-patterns module holds more than the arrays it used to`);
  }
  const emptied = `${PATTERNS_MODULE}  var ${names.map((name) => `${name} = []`).join(', ')};\n`;
  return contentScript.slice(0, start) + emptied + contentScript.slice(end);
}
