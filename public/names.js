// @ts-check
// Name rules the page applies as the Go code does, from the values of rules.js. Pure functions,
// no DOM: internal/pagerules runs them in Node against the Go functions on the same inputs.
import { EXTERNAL_MODEL_PREFIX, MAX_MODEL_NAME, TOOL_NAME } from './rules.js';

const encoder = new TextEncoder();

/**
 * validToolName reports whether name is a tool name (internal/shared/miniapp.ValidToolName).
 * @param {unknown} name
 * @returns {boolean}
 */
export function validToolName(name) {
  return typeof name === 'string' && TOOL_NAME.test(name);
}

/**
 * utf8Length is the length of s in UTF-8 bytes, the unit Go's len counts.
 * @param {string} s
 */
function utf8Length(s) {
  return encoder.encode(s).length;
}

/**
 * externalModelName is the name the model knows an external app's tool by: app_x_<appId>__<tool>
 * (internal/shared/externalapp.ModelName). The "x" can never be a hex digit, so it never meets a sandboxed
 * mini-app's app_<8 hex>__<tool>. A name over MAX_MODEL_NAME keeps the start of the tool's name
 * and ends in _ and 8 hex digits of SHA-256 of the tool's name. Lengths count UTF-8 bytes, as Go
 * does; the tool's name is one validToolName takes (ASCII), so cutting it never splits a character.
 * @param {string} appId
 * @param {string} tool
 * @returns {Promise<string>}
 */
export async function externalModelName(appId, tool) {
  const head = `${EXTERNAL_MODEL_PREFIX}${appId}__`;
  const whole = head + tool;
  if (utf8Length(whole) <= MAX_MODEL_NAME) return whole;
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', encoder.encode(tool)));
  const hex = [...digest.slice(0, 4)].map((b) => b.toString(16).padStart(2, '0')).join('');
  const keep = Math.max(MAX_MODEL_NAME - utf8Length(head) - 9, 0);
  return `${head}${tool.slice(0, keep)}_${hex}`;
}
