// Copying a secret the page shows, with a way out when the browser refuses the clipboard.

/**
 * Copies the text of `element`; where the clipboard is not allowed (permissions, an insecure origin), selects it so
 * the user can copy it by hand. Resolves to the notice to show.
 * @param {HTMLElement} element @param {string} what e.g. "Key"
 */
export async function copyShown(element, what) {
  try {
    await navigator.clipboard.writeText(element.textContent ?? '');
    return `${what} copied to the clipboard.`;
  } catch {
    getSelection()?.selectAllChildren(element);
    return `Copying was not allowed here; the ${what.toLowerCase()} is selected, copy it with your keyboard.`;
  }
}
