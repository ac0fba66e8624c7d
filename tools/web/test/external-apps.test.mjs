// The external apps' pure modules (public/external-app-wire.js, public/external-app-state.js),
// without a browser: node --test tools/web/test/ (./build.sh test lint runs it).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  ADAPTERS, adapterOf, answerOf, boundPayload, callArgs, clamp, contextPatch, contextValue, elementOf, describe, envelope, initResult, LIMITS,
  NOT_JSONRPC, notApproved, parseToolsList, PROTOCOL, resultText, timeoutRefusal, unacceptable,
} from '../../../public/external-app-wire.js';
import {
  beginHandshake, countStray, forgetHandshake, frameLoaded, identified, MAX_IGNORED_SAMPLES, MAX_STRAY_ORIGINS, newStats, newStrays,
  noteIgnored, owedAnswer, Pending, repeatsHandshake, takeToolsChange,
} from '../../../public/external-app-state.js';

/** entry is a registry entry speaking protocol. */
const entry = (protocol = undefined, capabilities = []) => ({ id: 'orders', name: 'Orders', url: 'https://orders.test/', origin: 'https://orders.test', capabilities, protocol });

test('each protocol gets its adapter, and an unknown one ours', () => {
  assert.equal(adapterOf(entry()).name, 'voicebox');
  assert.equal(adapterOf(entry('thunderbolt')).name, 'thunderbolt');
  assert.equal(adapterOf(entry('jsonrpc')).name, 'jsonrpc');
  assert.equal(adapterOf(entry('smoke-signals')).name, 'voicebox');
});

test('an envelope carries its protocol marker, and plain JSON-RPC none', () => {
  assert.deepEqual(envelope(ADAPTERS.voicebox, { id: 1, method: 'ui/identify' }), { jsonrpc: '2.0', protocol: PROTOCOL, id: 1, method: 'ui/identify' });
  assert.deepEqual(envelope(ADAPTERS.jsonrpc, { id: 1 }), { jsonrpc: '2.0', id: 1 });
  assert.equal(envelope(ADAPTERS.thunderbolt, { id: 2 }).protocol, 'thunderbolt-miniapp');
});

test('unacceptable names why a message is not an envelope of the app\'s protocol', () => {
  const ours = ADAPTERS.voicebox;
  assert.equal(unacceptable(ours, { jsonrpc: '2.0', protocol: PROTOCOL, method: 'ui/initialize' }), '');
  assert.match(unacceptable(ours, null), /not an object/);
  assert.match(unacceptable(ours, [1]), /not an object/);
  assert.match(unacceptable(ours, { jsonrpc: '2.0', method: 'x' }), /^no marker/);
  assert.match(unacceptable(ours, { jsonrpc: '2.0', protocol: 'thunderbolt-miniapp' }), /set "protocol": "thunderbolt"/);
  assert.match(unacceptable(ours, { jsonrpc: '2.0', protocol: 'other' }), /^wrong marker: "other"/);
  assert.equal(unacceptable(ours, { protocol: PROTOCOL, method: 'x' }), NOT_JSONRPC);
  // Plain JSON-RPC takes no marker and tells ours apart.
  assert.equal(unacceptable(ADAPTERS.jsonrpc, { jsonrpc: '2.0', method: 'x' }), '');
  assert.match(unacceptable(ADAPTERS.jsonrpc, { jsonrpc: '2.0', protocol: PROTOCOL }), /is the voicebox protocol/);
});

test('ui/initialize is read by each protocol, and Thunderbolt\'s versions are checked', () => {
  const mcp = ADAPTERS.voicebox.init({ documentId: 'd'.repeat(300), appCapabilities: { tools: 1, auth: true }, appInfo: { name: 'A', version: 2 } });
  assert.ok(!('invalid' in mcp));
  assert.equal(mcp.documentId?.length, 200);
  assert.deepEqual(mcp.caps, { tools: true, context: false, auth: true });
  assert.deepEqual(mcp.appInfo, { name: 'A', version: '2' });
  const tb = ADAPTERS.thunderbolt.init({ protocolVersion: 3, appName: 'T', capabilities: { context: true } });
  assert.deepEqual('invalid' in tb ? null : tb.caps, { tools: false, context: true, auth: false });
  const old = ADAPTERS.thunderbolt.init({ protocolVersion: 2 });
  assert.ok('invalid' in old && /protocolVersion 2/.test(old.invalid));
});

test('the host\'s ui/initialize answer offers auth only to an app granted it', () => {
  const ctx = { theme: 'dark', locale: 'en', platform: 'web', timeZone: 'UTC' };
  const plain = initResult(entry(), ctx);
  assert.equal(plain.protocolVersion, PROTOCOL);
  assert.ok(!('auth' in /** @type {any} */ (plain.hostCapabilities)));
  assert.ok('auth' in /** @type {any} */ (initResult(entry(undefined, ['auth']), ctx).hostCapabilities));
  // Thunderbolt's answer keeps only its host context's three fields, and the token when minted.
  const tb = ADAPTERS.thunderbolt.initResult({ ...plain, auth: { token: 't' } });
  assert.deepEqual(tb, { hostContext: { theme: 'dark', locale: 'en', platform: 'web' }, auth: { token: 't' } });
});

test('clamp cuts by code points and marks the cut', () => {
  assert.equal(clamp('abc', 3), 'abc');
  assert.equal(clamp('abcd', 3), 'ab…');
  assert.equal(clamp('🙂🙂🙂🙂', 3), '🙂🙂…');
  assert.equal(clamp(12345, 4), '123…');
});

test('describe names a message in a few words', () => {
  assert.equal(describe('hi'), 'string');
  assert.equal(describe({ protocol: 'p', method: 'm' }), 'protocol "p", method "m"');
  assert.equal(describe({ id: 7 }), 'an answer to id 7');
  assert.equal(describe({}), 'an object with no fields');
});

test('an answer settles its request: a result, or an error cut to a refusal', () => {
  assert.deepEqual(answerOf('tools/list', { id: 1, result: { tools: [] } }), { ok: true, value: { tools: [] } });
  const r = answerOf('tools/call', { id: 1, error: { message: 'x'.repeat(1000) } });
  assert.equal(r.ok, false);
  assert.ok(!r.ok && r.refused === 'external-app-error' && [...r.why].length === LIMITS.error);
  assert.equal(timeoutRefusal('tools/call', 5).refused, 'tool-timeout');
  assert.equal(timeoutRefusal('ui/get-context', 5).refused, 'context-unavailable');
});

test('tools/list takes each descriptor on its own, and at most LIMITS.tools', () => {
  const { tools, dropped } = parseToolsList({
    tools: [
      { name: 'list', annotations: { readOnlyHint: true } },
      { name: 'list' },
      { name: 'bad name' },
      'not an object',
      { name: 'typed', inputSchema: { type: 'string' } },
      { name: 'big', inputSchema: { type: 'object', description: 'x'.repeat(LIMITS.schema) } },
      { name: 'write', description: 'd'.repeat(LIMITS.description + 10), inputSchema: { type: 'object' } },
    ],
  });
  assert.deepEqual(tools.map((t) => [t.name, t.readOnly]), [['list', true], ['write', false]]);
  assert.deepEqual(tools[0].inputSchema, { type: 'object' });
  assert.equal([...tools[1].description].length, LIMITS.description);
  assert.deepEqual(dropped.map((d) => d.index), [1, 2, 3, 4, 5]);
  assert.match(dropped[0].why, /another tool/);
  assert.equal(dropped[2].name, '#3');
  const many = parseToolsList({ tools: Array.from({ length: LIMITS.tools + 3 }, (_, i) => ({ name: `t${i}` })) });
  assert.equal(many.tools.length, LIMITS.tools);
  assert.equal(many.dropped.length, 3);
  assert.deepEqual(parseToolsList(null), { tools: [], dropped: [] });
});

test('a tool\'s result is read as text, cut at LIMITS.result', () => {
  assert.deepEqual(resultText({ content: [{ type: 'text', text: 'a' }, { type: 'image' }, null] }), { text: 'a\n[image content]' });
  assert.deepEqual(resultText({ content: [], structuredContent: { n: 1 }, isError: true }), { text: '{"n":1}', isError: true });
  const long = resultText({ content: [{ type: 'text', text: 'x'.repeat(LIMITS.result + 5) }] });
  assert.ok(long.text.endsWith('[cut: 5 more characters]'));
});

test('a context payload over the bound is withheld whole, never cut', () => {
  assert.equal(boundPayload(undefined), null);
  assert.deepEqual(boundPayload({ a: 1 }), { a: 1 });
  const big = /** @type {any} */ (boundPayload('x'.repeat(LIMITS.payload)));
  assert.equal(big.withheld, true);
  const cyclic = /** @type {any} */ ({});
  cyclic.self = cyclic;
  assert.match(/** @type {any} */ (boundPayload(cyclic)).note, /not JSON/);
  const none = contextValue({ id: 'a', name: 'A' }, null);
  assert.ok(!none.ok && none.refused === 'context-unavailable');
  const c = contextValue({ id: 'a', name: 'A' }, { title: 't'.repeat(LIMITS.title + 1), summary: 3 });
  assert.ok(c.ok);
  assert.equal([.../** @type {any} */ (c.value).title].length, LIMITS.title);
  assert.equal(/** @type {any} */ (c.value).summary, '');
});

test('a call\'s arguments must be an object, and an approval not given says why', () => {
  assert.deepEqual(callArgs(undefined), { ok: true, value: {} });
  assert.deepEqual(callArgs({ a: 1 }), { ok: true, value: { a: 1 } });
  assert.equal(callArgs([1]).ok, false);
  assert.equal(callArgs('x').ok, false);
  const rules = ['denied', 'timedOut', 'navigated', 'cancelled'].map((o) => notApproved(/** @type {any} */ (o), 'buy', 'Orders', 60000).refused);
  assert.deepEqual(rules, ['approval-denied', 'approval-timed-out', 'external-app-navigated', 'tool-timeout']);
  assert.match(notApproved('timedOut', 'buy', 'Orders', 60000).why, /within 60 s/);
});

test('strays are counted by at most MAX_STRAY_ORIGINS origins, every one in the total', () => {
  const strays = newStrays();
  for (let i = 0; i < MAX_STRAY_ORIGINS + 10; i++) countStray(strays, `https://o${i}.test`);
  countStray(strays, 'https://o0.test');
  countStray(strays, 'https://late.test');
  assert.equal(strays.total, MAX_STRAY_ORIGINS + 12);
  assert.equal(strays.byOrigin.size, MAX_STRAY_ORIGINS);
  assert.equal(strays.byOrigin.get('https://o0.test'), 2);
  assert.equal(strays.byOrigin.has('https://late.test'), false);
});

test('ignored messages are counted by why and the first few kept', () => {
  const stats = newStats();
  for (let i = 0; i < 20; i++) noteIgnored(stats, `why ${i}`, { method: `m${i}` });
  noteIgnored(stats, 'why 0', {});
  noteIgnored(stats, 'why 19', {});
  assert.equal(stats.ignored.total, 22);
  assert.equal(Object.keys(stats.ignored.byWhy).length, 16);
  assert.equal(stats.ignored.byWhy['why 0'], 2);
  assert.equal(stats.ignored.byWhy['why 19'], undefined);
  assert.equal(stats.ignored.samples.length, MAX_IGNORED_SAMPLES);
  assert.equal(stats.ignored.samples[0].what, 'method "m0"');
});

test('only an answer to a request the page waits on, from the app\'s origin, is owed', () => {
  const app = { entry: { origin: 'https://orders.test' }, pending: new Map([[3, {}]]) };
  assert.equal(owedAnswer(app, 'https://orders.test', { id: 3, result: {} }), true);
  assert.equal(owedAnswer(app, 'https://orders.test', { id: 4, result: {} }), false);
  assert.equal(owedAnswer(app, 'https://evil.test', { id: 3, result: {} }), false);
  assert.equal(owedAnswer(app, 'https://orders.test', { id: 3, method: 'tools/list' }), false);
  assert.equal(owedAnswer(app, 'https://orders.test', null), false);
});

test('ui/identify keeps the handshake only for the document it was made with', () => {
  const app = { live: true, documentId: 'doc-1' };
  assert.equal(identified(app, { documentId: 'doc-1' }), null);
  assert.match(String(identified(app, { documentId: 'doc-2' })), /not begun a handshake/);
  assert.match(String(identified(app, {})), /without a document id/);
  assert.match(String(identified({ live: false, documentId: 'doc-1' }, { documentId: 'doc-1' })), /not begun/);
});

test('tools-changed is honoured LIMITS.toolsChanged times a handshake, then counted', () => {
  const app = { toolsChanged: 0, stats: newStats() };
  let honoured = 0;
  for (let i = 0; i < LIMITS.toolsChanged + 4; i++) if (takeToolsChange(app)) honoured++;
  assert.equal(honoured, LIMITS.toolsChanged);
  assert.equal(app.stats.toolsChangedHonoured, LIMITS.toolsChanged);
  assert.equal(app.stats.toolsChangedIgnored, 4);
});

test('each request is settled once: by its answer, its deadline, or a navigation', async () => {
  const p = new Pending();
  const a = p.open('tools/list', 10_000);
  const b = p.open('tools/call', 10_000);
  const identify = p.open('ui/identify', 10_000);
  assert.deepEqual([a.id, b.id, identify.id], [1, 2, 3]);
  assert.equal(p.size, 3);
  assert.equal(p.answer({ id: 1, result: { tools: ['x'] } }), true);
  assert.deepEqual(await a.answered, { tools: ['x'] });
  assert.equal(p.answer({ id: 1, result: {} }), false); // a second answer answers nothing
  assert.equal(p.has(1), false);
  // A navigation refuses what waits, but ui/identify, which its deadline settles.
  p.drop('the frame loaded a new document', (q) => q.method === 'ui/identify');
  await assert.rejects(b.answered, (r) => r.refused === 'external-app-navigated' && /tools\/call was not answered/.test(r.why));
  assert.equal(p.has(3), true);
  assert.equal(p.answer({ id: 3, error: { message: 'no' } }), true);
  await assert.rejects(identify.answered, (r) => r.refused === 'external-app-error');
  const late = p.open('tools/call', 5);
  await assert.rejects(late.answered, (r) => r.refused === 'tool-timeout' && /within 5 ms/.test(r.why));
  assert.equal(p.size, 0);
  assert.equal(p.answer({ id: late.id, result: {} }), false);
});

/** handshake is an open app's handshake state before any document made one. */
function handshake() {
  return { live: false, documentId: null, initResult: null, caps: {}, appInfo: null, tools: [], toolsChanged: 0, selection: null, initSinceLoad: false, stats: newStats() };
}

test('the handshake follows the document in the frame', () => {
  const app = /** @type {any} */ (handshake());
  const init = { documentId: 'doc-1', caps: { tools: true, context: false, auth: false }, appInfo: { name: 'n'.repeat(200), version: '1' } };
  assert.equal(repeatsHandshake(app, init), false);
  assert.equal(beginHandshake(app, init), 1);
  assert.equal(app.live, true);
  assert.equal([...app.appInfo.name].length, LIMITS.appName);
  // Not answered yet: the same document asking again begins again.
  assert.equal(repeatsHandshake(app, init), false);
  app.initResult = {};
  assert.equal(repeatsHandshake(app, init), true);
  assert.equal(repeatsHandshake(app, { ...init, documentId: 'doc-2' }), false);
  assert.equal(repeatsHandshake(app, { ...init, documentId: null }), false);
  // A load after the handshake: the document is asked which it is.
  assert.equal(frameLoaded(app), 'identify');
  app.tools = [{ name: 't' }];
  app.toolsChanged = 3;
  assert.equal(forgetHandshake(app), true);
  assert.deepEqual([app.live, app.documentId, app.initResult, app.tools, app.toolsChanged], [false, null, null, [], 0]);
  assert.equal(forgetHandshake(app), false);
  assert.equal(beginHandshake(app, init), 2);
});

test('a guest with no document id keeps its handshake for one load, the one it was made in', () => {
  const app = /** @type {any} */ (handshake());
  beginHandshake(app, { documentId: null, caps: { tools: false, context: false, auth: false }, appInfo: { name: '', version: '' } });
  assert.equal(frameLoaded(app), 'keep'); // the load of the document that made it
  assert.equal(frameLoaded(app), 'reset'); // the next document's
  assert.equal(app.stats.loads, 2);
  forgetHandshake(app);
  assert.equal(frameLoaded(app), 'identify');
});

test('a token is written as each protocol reads it: Thunderbolt\'s expiresAt in ISO 8601, ours in Unix milliseconds', () => {
  const minted = { token: 'jwt', expiresAt: Date.UTC(2026, 11, 5, 12, 0, 0) };
  assert.deepEqual(ADAPTERS.thunderbolt.token(minted), { token: 'jwt', expiresAt: '2026-12-05T12:00:00.000Z' });
  assert.equal(Date.parse(ADAPTERS.thunderbolt.token(minted).expiresAt), minted.expiresAt);
  assert.deepEqual(ADAPTERS.voicebox.token(minted), minted);
  assert.deepEqual(ADAPTERS.jsonrpc.token(minted), minted);
});

test('a host context change is sent as the patch of what moved, in the protocol\'s fields', () => {
  const before = { theme: 'light', locale: 'en-US', platform: 'web', timeZone: 'UTC' };
  const after = { ...before, theme: 'dark', timeZone: 'Europe/Paris' };
  assert.deepEqual(contextPatch(ADAPTERS.voicebox.hostContext(before), ADAPTERS.voicebox.hostContext(after)), { theme: 'dark', timeZone: 'Europe/Paris' });
  assert.deepEqual(contextPatch(ADAPTERS.thunderbolt.hostContext(before), ADAPTERS.thunderbolt.hostContext(after)), { theme: 'dark' });
  assert.deepEqual(contextPatch(ADAPTERS.thunderbolt.hostContext(before), ADAPTERS.thunderbolt.hostContext({ ...before, timeZone: 'Asia/Tokyo' })), {});
});

test('an answer to ui/element-at is read as what was pointed at, cut, or nothing', () => {
  assert.equal(ADAPTERS.thunderbolt.elementAt, true);
  assert.ok(!ADAPTERS.voicebox.elementAt && !ADAPTERS.jsonrpc.elementAt);
  assert.deepEqual(elementOf({ element: { id: 'r1', label: 'Q3', text: ' Revenue: 4,214,000 ', rect: { x: 0, y: 0, width: 1, height: 1 } } }), { label: 'Q3', text: 'Revenue: 4,214,000' });
  assert.equal(elementOf({ element: null }), null);
  assert.equal(elementOf({ element: { text: '   ' } }), null);
  assert.equal(elementOf({ element: { text: 7 } }), null);
  assert.equal(elementOf(null), null);
  assert.equal([...elementOf({ element: { text: 'x'.repeat(LIMITS.elementText + 50) } }).text].length, LIMITS.elementText);
});
