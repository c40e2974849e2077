// Finding the page's elements with the type a script needs of them.

/**
 * byId returns the element with `id`, checked to be a `type` (any HTMLElement unless given). The page
 * templates and the scripts are written together: a missing element is a mistake, so it throws.
 * @template {HTMLElement} T
 * @param {string} id
 * @param {{ new (): T, prototype: T }} [type]
 * @returns {T}
 */
export function byId(id, type) {
  const element = document.getElementById(id);
  const expected = type ?? HTMLElement;
  if (!(element instanceof expected)) throw new Error(`The page has no #${id} of the kind its script needs.`);
  return /** @type {T} */ (element);
}

/**
 * one returns the first element that matches `selector` within `root`, checked to be a `type`.
 * @template {Element} T
 * @param {ParentNode} root
 * @param {string} selector
 * @param {{ new (): T, prototype: T }} type
 * @returns {T}
 */
export function one(root, selector, type) {
  const element = root.querySelector(selector);
  if (!(element instanceof type)) throw new Error(`The page has no ${selector} of the kind its script needs.`);
  return element;
}
