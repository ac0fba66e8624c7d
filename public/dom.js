// @ts-check
// Small DOM helpers the page's modules share.

/**
 * byId returns the page's element with this id, of the expected type (HTMLElement unless said).
 * The page's HTML and its modules ship together, so a missing element is a bug: it throws.
 * @template {HTMLElement} [T=HTMLElement]
 * @param {string} id
 * @param {{new (): T, prototype: T}} [type]
 * @returns {T}
 */
export function byId(id, type) {
  const el = document.getElementById(id);
  const want = type || HTMLElement;
  if (!(el instanceof want)) throw new Error(`voicebox: the page has no ${want.name} #${id}`);
  return /** @type {T} */ (el);
}

/**
 * node makes an element with an optional class name and text.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {string} [cls]
 * @param {string} [text]
 * @returns {HTMLElementTagNameMap[K]}
 */
export function node(tag, cls, text) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  if (text !== undefined) n.textContent = text;
  return n;
}
