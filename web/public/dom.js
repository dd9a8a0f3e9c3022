// Building the dashboard's DOM: text only, never HTML strings.

/**
 * Creates an element with properties and children (strings become text nodes, null and undefined are left out).
 * @param {string} tag @param {Record<string, unknown>} props @param {(Node | string | null | undefined)[]} children
 */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (name === 'dataset') Object.assign(element.dataset, value);
    else element[name] = value;
  }
  element.append(...children.filter((child) => child !== null && child !== undefined));
  return element;
}
