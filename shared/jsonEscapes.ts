/**
 * How many characters JSON writes inside a string for each ASCII character: six for a control character
 * (`\u0001`), two for the five with short escapes (\b \t \n \f \r), a quote and a backslash, one for the rest. A page
 * chooses its text, so what it costs as JSON is what counts against a limit: eight million U+0001 are 48 MB of JSON.
 */
export const JSON_ESCAPED_LENGTH = Uint8Array.from({ length: 0x80 }, (_, code) =>
  [0x08, 0x09, 0x0a, 0x0c, 0x0d, 0x22, 0x5c].includes(code) ? 2 : code < 0x20 ? 6 : 1,
);
