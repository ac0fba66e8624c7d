// worker-client.js: a call crosses to the worker as its JSON text, with what JSON cannot carry
// (bytes, a handle or a port) beside the text; the engine's messages come back as JSON text, an
// answer's bytes beside it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { unwrap, wrap } from '../../../public/worker-client.js';

test('a call without bytes, handle or port is its JSON text alone', () => {
  const text = wrap(7, 'files.list', { dir: 'a' });
  assert.equal(typeof text, 'string');
  assert.deepEqual(JSON.parse(/** @type {string} */ (text)), { type: 'call', id: 7, method: 'files.list', params: { dir: 'a' } });
  assert.deepEqual(JSON.parse(/** @type {string} */ (wrap(8, 'status', undefined))), { type: 'call', id: 8, method: 'status' });
});

test('bytes and an object go beside the text, out of it', () => {
  const bytes = new Uint8Array([1, 2, 3]);
  const out = /** @type {any} */ (wrap(9, 'files.upload.chunk', { uploadId: 'up1', bytes }));
  assert.equal(out.bytes, bytes);
  assert.equal(out.object, undefined);
  assert.deepEqual(JSON.parse(out.call), { type: 'call', id: 9, method: 'files.upload.chunk', params: { uploadId: 'up1' } });
  const port = { postMessage() {} };
  const withPort = /** @type {any} */ (wrap(10, 'miniapps.port', { appId: 'a', doc: 1, port }));
  assert.equal(withPort.object, port);
  assert.deepEqual(JSON.parse(withPort.call).params, { appId: 'a', doc: 1 });
  const handle = { kind: 'directory' };
  assert.equal(/** @type {any} */ (wrap(11, 'root.open', { kind: 'handle', handle })).object, handle);
});

test("the engine's text is parsed, an answer's bytes put at value.bytes, anything else kept", () => {
  assert.deepEqual(unwrap('{"type":"result","id":1,"ok":true,"value":{"a":1}}'), { type: 'result', id: 1, ok: true, value: { a: 1 } });
  const bytes = new Uint8Array([4]);
  const msg = unwrap({ json: '{"type":"result","id":2,"ok":true,"value":{"size":1}}', bytes });
  assert.equal(msg.value.bytes, bytes);
  assert.equal(msg.value.size, 1);
  assert.deepEqual(unwrap({ type: 'failed', message: 'x' }), { type: 'failed', message: 'x' });
  assert.equal(unwrap('not json'), 'not json');
});
