// @ts-check
// The form a person calls a mini-app's tool with by hand, made from the tool's parameter schema:
// one field per property (a select for an enum, a checkbox for a boolean, a number field for a
// number, a JSON box for an array or object), read back as the values the tool takes. Sandboxed
// apps (mini-apps.js) and external apps (external-apps.js) use the same form.
import { node } from './dom.js';
import { refusalNode } from './results.js';

/** @typedef {import('./worker-client.js').JSONSchema} JSONSchema */
/** @typedef {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement} Field */
/**
 * Outcome is what calling a tool from the form gave: text to show, or a refusal.
 * @typedef {{ok: true, text: string} | {ok: false, refused: string, why: string}} Outcome
 */

/**
 * toolForm makes the <details> that shows a tool and its form; run calls the tool with the
 * arguments the form read.
 * @param {{name: string, description: string, schema: JSONSchema | undefined, app: string, note?: string,
 *   run: (args: Record<string, unknown>) => Promise<Outcome>}} tool
 * @returns {HTMLDetailsElement}
 */
export function toolForm({ name, description, schema, app, note, run }) {
  const details = node('details', 'tool');
  details.dataset.tool = name;
  const summary = node('summary');
  summary.append(node('code', '', name), node('span', '', ` ${note ? note + ' ' : ''}${description}`));
  const form = node('form');
  const s = schema || {};
  const props = s.properties || {};
  const required = new Set(s.required || []);
  /** @type {[string, JSONSchema, Field][]} */
  const readers = [];
  for (const [key, prop] of Object.entries(props)) {
    const label = node('label', '', key + (required.has(key) ? ' *' : ''));
    const input = fieldFor(prop);
    input.name = key;
    if (required.has(key) && !(input instanceof HTMLInputElement && input.type === 'checkbox')) input.required = true;
    label.append(input);
    form.append(label);
    readers.push([key, prop, input]);
  }
  const out = node('div', 'tool-result');
  out.setAttribute('aria-live', 'polite');
  const call = node('button', '', 'Call');
  call.type = 'submit';
  call.setAttribute('aria-label', `Call ${name} in ${app}`);
  form.append(call, out);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    /** @type {Record<string, unknown>} */
    const args = {};
    try {
      for (const [key, prop, input] of readers) {
        const v = readField(prop, input);
        if (v !== undefined) args[key] = v;
      }
    } catch (err) {
      out.dataset.state = 'refused';
      out.replaceChildren(err instanceof Error ? err.message : String(err));
      return;
    }
    out.replaceChildren('…');
    delete out.dataset.state;
    call.disabled = true;
    try {
      const answer = await run(args);
      out.dataset.state = answer.ok ? 'ok' : 'refused';
      out.replaceChildren(answer.ok ? node('pre', '', answer.text) : refusalNode(answer.refused, answer.why, 'tool-refusal'));
    } finally {
      call.disabled = false;
    }
  });
  details.append(summary, form);
  return details;
}

/**
 * fieldFor makes the form field for one property of a tool's parameters.
 * @param {JSONSchema} prop
 * @returns {Field}
 */
export function fieldFor(prop) {
  if (Array.isArray(prop.enum)) {
    const select = node('select');
    select.append(new Option('', ''));
    for (const v of prop.enum) select.append(new Option(String(v), JSON.stringify(v)));
    return select;
  }
  if (prop.type === 'array' || prop.type === 'object') {
    const area = node('textarea');
    area.placeholder = 'JSON';
    if (prop.maxLength !== undefined) area.maxLength = prop.maxLength;
    return area;
  }
  const input = node('input');
  switch (prop.type) {
    case 'boolean': input.type = 'checkbox'; break;
    case 'number': input.type = 'number'; input.step = 'any'; break;
    case 'integer': input.type = 'number'; input.step = '1'; break;
    default: input.type = 'text';
  }
  if (prop.minimum !== undefined) input.min = String(prop.minimum);
  if (prop.maximum !== undefined) input.max = String(prop.maximum);
  if (prop.maxLength !== undefined) input.maxLength = prop.maxLength;
  return input;
}

/**
 * readField reads one field back as the value the tool gets; undefined leaves it out.
 * @param {JSONSchema} prop
 * @param {Field} input
 * @returns {unknown}
 */
export function readField(prop, input) {
  if (Array.isArray(prop.enum)) return input.value === '' ? undefined : JSON.parse(input.value);
  if (prop.type === 'boolean') return input instanceof HTMLInputElement && input.checked;
  if (input.value === '') return undefined;
  if (prop.type === 'number' || prop.type === 'integer') return Number(input.value);
  if (prop.type === 'array' || prop.type === 'object') {
    try { return JSON.parse(input.value); } catch { throw new Error(`${input.name} must be JSON`); }
  }
  return input.value;
}
