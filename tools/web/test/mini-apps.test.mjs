// The mini-apps' pure host module (public/mini-app-host.js), without a browser:
// node --test tools/web/test/ (./build.sh test lint runs it).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  appHost, appHosts, bridgeIgnored, bridgeURL, Calls, cspGiven, MAX_FRAME_DEPTH, MAX_IGNORED_SHOWN, MAX_MESSAGE_TEXT, MAX_VIEW_HEIGHT,
  messageText, MIN_VIEW_HEIGHT, noToolsText, openLink, overBudget, ownerOf, timedOut, toolResult, turnAnswer, viewAppId,
  viewCall, viewHeight,
} from '../../../public/mini-app-host.js';
import { MESSAGE_BUDGET_EXCEEDED, TOOL_TIMEOUT_MS } from '../../../public/rules.js';

test('an app is stopped with a named rule and what it spent', () => {
  assert.deepEqual(overBudget('too many', '12', undefined), { rule: MESSAGE_BUDGET_EXCEEDED, why: 'too many', spent: { messages: 12, bytes: 0 } });
  const t = timedOut('add');
  assert.equal(t.rule, 'tool-timeout');
  assert.match(t.why, new RegExp(`within ${TOOL_TIMEOUT_MS} ms`));
});

/**
 * windows is a chain of n windows, each the parent of the one before it; the last is its own parent.
 * @param {number} n
 */
function windows(n) {
  /** @type {{parent: any, name: number}[]} */
  const ws = Array.from({ length: n }, (_, i) => ({ parent: null, name: i }));
  ws.forEach((w, i) => { w.parent = ws[i + 1] || w; });
  return ws;
}

test('a window belongs to the bridge at most MAX_FRAME_DEPTH windows above it, and the answer is kept', () => {
  const ws = windows(MAX_FRAME_DEPTH + 3);
  const owners = new WeakMap();
  const running = { app: 'a' };
  owners.set(ws[MAX_FRAME_DEPTH], running);
  assert.equal(ownerOf(owners, ws[0]), running); // MAX_FRAME_DEPTH steps up
  assert.equal(owners.get(ws[0]), running); // kept
  const far = new WeakMap([[ws[MAX_FRAME_DEPTH + 1], running]]);
  assert.equal(ownerOf(far, ws[0]), null); // one step too far
  assert.equal(far.get(ws[0]), null); // a stranger is kept too
  assert.equal(ownerOf(owners, null), null);
  assert.equal(ownerOf(owners, 'window'), null);
  // A window that throws when its parent is read (another origin's, say) owns nothing.
  const hostile = { get parent() { throw new Error('cross-origin'); } };
  assert.equal(ownerOf(owners, hostile), null);
});

test('each app gets a host of its own only on a loopback page over http', () => {
  assert.equal(appHosts({ protocol: 'http:', hostname: '127.0.0.1' }), true);
  assert.equal(appHosts({ protocol: 'http:', hostname: 'localhost' }), true);
  assert.equal(appHosts({ protocol: 'https:', hostname: 'localhost' }), false);
  assert.equal(appHosts({ protocol: 'http:', hostname: 'voicebox.example' }), false);
  assert.equal(appHost(new Uint8Array([0, 1, 2, 3, 4, 5, 6, 255]), '8080'), 'app-00010203040506ff.localhost:8080');
  assert.equal(appHost(new Uint8Array(8), ''), 'app-0000000000000000.localhost');
});

test('a bridge is framed with the page\'s origin and only the tokens it has', () => {
  assert.equal(bridgeURL('http://app-1.localhost:1', 'http://127.0.0.1:1'), 'http://app-1.localhost:1/mini-app-bridge.html?host=http%3A%2F%2F127.0.0.1%3A1');
  assert.equal(bridgeURL('o', 'p', 'tok', 'a b'), 'o/mini-app-bridge.html?host=p&files=tok&view=a%20b');
  assert.equal(viewAppId('ext.one', 'show/map'), 'view-ext-one-show-map');
  assert.equal(viewAppId('e', 'x'.repeat(200)).length, 100);
});

test('a view\'s size is clamped, and a size that is no number ignored', () => {
  assert.equal(viewHeight(300.4), 300);
  assert.equal(viewHeight(1), MIN_VIEW_HEIGHT);
  assert.equal(viewHeight(1e9), MAX_VIEW_HEIGHT);
  assert.equal(viewHeight('nope'), null);
  assert.equal(viewHeight(-5), null);
  assert.equal(viewHeight(0), null);
});

test('the bridge\'s report of dropped messages is read with its samples cut', () => {
  const r = bridgeIgnored({ count: 9, samples: Array.from({ length: 9 }, () => ({ why: 'w'.repeat(400), what: 'x'.repeat(400) })) });
  assert.equal(r.count, 9);
  assert.equal(r.samples?.length, MAX_IGNORED_SHOWN);
  assert.equal(r.samples?.[0].why.length, 300);
  assert.equal(r.samples?.[0].what.length, 100);
  assert.deepEqual(bridgeIgnored({ count: 1.5, samples: 'no' }), { count: null, samples: null });
});

test('a view\'s tools/call goes to its own extension, a mini-app\'s to the catalogue', () => {
  assert.deepEqual(viewCall({ extension: 'maps' }, { name: 'zoom', arguments: { level: 3 } }),
    { action: { verb: 'call_extension', extension: 'maps', name: 'maps__zoom', arguments: '{"level":3}' } });
  // A view naming another extension's tool still calls its own extension's.
  const other = viewCall({ extension: 'maps' }, { name: 'mail__send' });
  assert.ok('action' in other && other.action.name === 'maps__mail__send' && other.action.arguments === '{}');
  assert.deepEqual(viewCall(null, { name: 'read_file', arguments: { path: 'a' } }), { action: { verb: 'read_file', path: 'a' } });
  assert.deepEqual(viewCall(null, { name: 'x', arguments: [1] }), { action: { verb: 'x' } });
  const none = viewCall(null, {});
  assert.ok('error' in none && none.error.code === -32602);
});

test('ui/open-link opens only absolute http and https links', () => {
  const ok = openLink({ url: 'https://example.com/a' });
  assert.ok('url' in ok && ok.url.href === 'https://example.com/a');
  for (const url of ['javascript:alert(1)', 'file:///etc/passwd', 'data:text/html,x', '/relative', undefined]) {
    const r = openLink({ url });
    assert.ok('error' in r && r.error.code === -32602, String(url));
  }
});

test('ui/message keeps only its text, cut', () => {
  assert.equal(messageText({ content: [{ type: 'text', text: 'a' }, { type: 'image', data: 'x' }, { type: 'text', text: 'b' }, null] }), 'a\nb');
  assert.equal(messageText({ content: 'nope' }), '');
  assert.equal(messageText({ content: [{ type: 'text', text: 'x'.repeat(MAX_MESSAGE_TEXT + 9) }] }).length, MAX_MESSAGE_TEXT);
});

test('a turn\'s result becomes an MCP tool result, and a refusal an error result', () => {
  assert.deepEqual(toolResult('plain'), { content: [{ type: 'text', text: 'plain' }] });
  assert.deepEqual(toolResult('{"n":1}'), { content: [{ type: 'text', text: '{"n":1}' }] });
  assert.deepEqual(toolResult({ text: 't', server: 's', media: [{ kind: 'audio', mimeType: 'audio/wav', data: 'AA' }], structuredContent: { a: 1 } }),
    { content: [{ type: 'text', text: 't' }, { type: 'audio', mimeType: 'audio/wav', data: 'AA' }], structuredContent: { a: 1 } });
  assert.deepEqual(turnAnswer({ ok: false, refused: 'approval-denied', why: 'no' }),
    { result: { content: [{ type: 'text', text: 'approval-denied: no' }], isError: true } });
  assert.deepEqual(turnAnswer({ ok: true, result: 'r' }), { result: { content: [{ type: 'text', text: 'r' }] } });
});

test('a view\'s given origins are listed once, and an app with no tools says why', () => {
  assert.deepEqual(cspGiven({ connectDomains: ['https://a', 'https://b'], resourceDomains: ['https://a'], frameDomains: ['https://c'] }), ['https://a', 'https://b', 'https://c']);
  assert.deepEqual(cspGiven({}), []);
  assert.match(noToolsText('app', false, false), /^Waiting/);
  assert.match(noToolsText('app', false, true), /^This app registered no tools/);
  assert.match(noToolsText('page', false, false), /^This page registered no tools/);
  assert.match(noToolsText('app', true, false), /^This app/);
});

test('each call carried to an app is answered to the worker once', async () => {
  /** @type {[string, unknown][]} */
  const told = [];
  const calls = new Calls((callId, answer) => told.push([callId, answer]));
  const a = { name: 'a' };
  const b = { name: 'b' };
  let expired = 0;
  calls.open('1', a, 'add', 10_000, () => expired++);
  calls.open('2', a, 'sub', 10_000, () => expired++);
  calls.open('3', b, 'mul', 10_000, () => expired++);
  assert.deepEqual(calls.get('1'), { app: a, tool: 'add' });
  assert.equal(calls.settle('1', { result: 3 }), true);
  assert.equal(calls.settle('1', { result: 4 }), false); // a second answer is not passed on
  calls.settleApp(a, { refused: 'mini-app-closed', why: 'closed' });
  assert.deepEqual(calls.forget('3'), { app: b, tool: 'mul' }); // the worker stopped waiting: no answer
  assert.equal(calls.forget('3'), undefined);
  assert.deepEqual(told, [['1', { result: 3 }], ['2', { refused: 'mini-app-closed', why: 'closed' }]]);
  // A call nobody answers is answered tool-timeout, then its app is stopped.
  /** @type {() => void} */
  let done = () => {};
  const stopped = new Promise((resolve) => { done = () => resolve(undefined); });
  calls.open('4', b, 'slow', 5, () => { expired++; done(); });
  await stopped;
  assert.equal(expired, 1);
  assert.deepEqual(told.at(-1), ['4', { refused: 'tool-timeout', why: 'tool execution timed out after 5ms' }]);
  assert.equal(calls.get('4'), undefined);
});
