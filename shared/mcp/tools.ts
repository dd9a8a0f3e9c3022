import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { IMAGE_FORMATS } from '../capture/renderer';
import { SCREENSHOT_FIELD_DESCRIPTIONS, URL_SHAPE } from '../openapi/screenshotFieldDescriptions';
import { screenshotRequest } from '../screenshot/schema';
import { validate } from '../validation';

/**
 * The MCP tools (docs/api.md, "MCP"): each is one screenshot request, its input schema a selection of the REST
 * body's own field schemas, so a bound or a default cannot differ between the two. The tool sets what the tool is
 * for (`format`, `response`) itself.
 */

const FIELDS = screenshotRequest.shape;
type FieldName = keyof typeof FIELDS;

/**
 * The named fields the REST body has (a name it does not have is left out, so a tool lists no field it refuses), each
 * described as the OpenAPI document describes it: an agent reads a field's bounds and defaults there.
 */
function fields(names: readonly string[]): Partial<typeof FIELDS> {
  return Object.fromEntries(
    names
      .filter((name): name is FieldName => name in FIELDS)
      .map((name) => {
        const described = FIELDS[name].describe(SCREENSHOT_FIELD_DESCRIPTIONS[name]);
        // The URL's shape too, as the OpenAPI document gives it (red team, round 24).
        return [name, name === 'url' ? described.meta(URL_SHAPE) : described];
      }),
  );
}

/** What the page is and how it is loaded and cleaned, for every tool. */
const PAGE_FIELDS = [
  'url',
  'html',
  'width',
  'height',
  'device',
  'delay',
  'waitUntil',
  'waitForSelector',
  'click',
  'userAgent',
  'headers',
  'cookies',
  'timezone',
  'locale',
  'darkMode',
  'reducedMotion',
  'mediaType',
  'css',
  'js',
  'hideSelectors',
  'blockAds',
  'blockCookieBanners',
  'blockChats',
  'failOnHttpError',
  'cache',
  'cacheTtl',
] as const;
const IMAGE_FIELDS = ['quality', 'fullPage', 'selector', 'scale', 'omitBackground'] as const;
const PDF_FIELDS = [
  'pdfPaperFormat',
  'pdfLandscape',
  'pdfPrintBackground',
  'pdfMargin',
  'pdfPageRanges',
  'pdfHeaderTemplate',
  'pdfFooterTemplate',
] as const;

/** Images up to this size come back inline as image content; larger ones as a link to the stored image. */
export const MAX_INLINE_IMAGE_BYTES = 1_000_000;
/**
 * The largest Markdown a tool answers with. The text is copied several times on its way into the JSON-RPC answer
 * (about seven times its size in memory), so larger text, which only a page of hundreds of thousands of paragraphs
 * or a renderer taken over would produce, would exhaust the front instead.
 */
export const MAX_INLINE_TEXT_BYTES = 32 * 1024 * 1024;

export const TOOLS = {
  take_screenshot: {
    title: 'Take a screenshot',
    description:
      `Captures a web page (url) or an HTML document (html) in real Chromium and returns the image: inline up to ` +
      `${MAX_INLINE_IMAGE_BYTES / 1_000_000} MB, otherwise a link to the stored image valid 1 hour. Costs credits as POST /api/screenshot.`,
    inputSchema: {
      ...fields(PAGE_FIELDS),
      ...fields(IMAGE_FIELDS),
      format: z
        .enum([...IMAGE_FORMATS, 'avif'])
        .default('png')
        .describe('Image format; default png'),
    },
  },
  get_page_markdown: {
    title: 'Get a page as Markdown',
    description:
      'Loads a web page in real Chromium (scripts run, ads and banners blocked on request) and returns its main content as Markdown (Mozilla Readability, then Turndown with GFM tables; links absolute), ' +
      `up to ${MAX_INLINE_TEXT_BYTES / 1024 / 1024} MiB. 1 credit.`,
    inputSchema: fields(PAGE_FIELDS),
  },
  get_page_pdf: {
    title: 'Get a page as PDF',
    description:
      'Prints a web page (url) or an HTML document (html) to PDF with Chromium and returns a link to the stored PDF, valid 1 hour. 2 credits.',
    inputSchema: { ...fields(PAGE_FIELDS), ...fields(PDF_FIELDS) },
  },
} as const;

export type ToolName = keyof typeof TOOLS;

export function isToolName(name: string): name is ToolName {
  return Object.hasOwn(TOOLS, name);
}

/** A tool's arguments: its own fields and no other (a REST field it leaves out, such as `async`, is refused). */
const toolArguments = (tool: ToolName) => z.strictObject(TOOLS[tool].inputSchema);

/** The tools as `tools/list` answers them, each input schema in JSON Schema. */
export const TOOL_LIST: Tool[] = (Object.keys(TOOLS) as ToolName[]).map((name) => ({
  name,
  title: TOOLS[name].title,
  description: TOOLS[name].description,
  inputSchema: z.toJSONSchema(toolArguments(name), { target: 'draft-7', io: 'input' }) as Tool['inputSchema'],
}));

/**
 * The screenshot body a tool call makes: the caller's arguments and what the tool is for. Read when the screenshot
 * use case reaches validation, so arguments the tool does not take are a 400 in its order of checks (counted by the
 * rate limit, recorded in usage), said as the REST API says it.
 */
export function toolRequest(tool: ToolName, input: unknown): Record<string, unknown> {
  // Arguments left out are none; `null` is no object, refused as any other.
  const given = input === undefined ? {} : input;
  validate(toolArguments(tool), given);
  const args = given as Record<string, unknown>;
  switch (tool) {
    case 'take_screenshot':
      return { ...args, response: 'json' };
    case 'get_page_markdown':
      return { ...args, format: 'markdown', response: 'image' };
    case 'get_page_pdf':
      return { ...args, format: 'pdf', response: 'json' };
  }
}
