// app-port.js: the worker's end of an app's direct port charges what the app posts to its message
// budget before Go reads it; an answer it owes is free and reaches Go, once; the rest is refused
// by name and counted there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { crossing, openAppPort, shaped } from '../../../public/app-port.js';
import { MALFORMED_ANSWER, MAX_OUTPUT_BYTES, MAX_PORT_REFUSAL_SAMPLES, MESSAGE_BUDGET, MINI_APP_UNSOLICITED_ANSWER } from '../../../public/rules.js';

/**
 * until waits for done() to hold, polling, at most 5 s.
 * @param {() => boolean} done
 */
async function until(done) {
  for (let i = 0; i < 500 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
}

test('a flood past the budget closes the port and is reported once; the owed answer is free', async () => {
  const { port1, port2 } = new MessageChannel();
  const got = [];
  const over = [];
  const end = openAppPort(port1, (text) => got.push(text), (why, messages, bytes) => over.push({ why, messages, bytes }));
  end.post(JSON.stringify({ type: 'call_tool', callId: 'mc-1' }), 'mc-1', true);
  for (let i = 0; i < MESSAGE_BUDGET + 100; i++) port2.postMessage({ type: 'tool_result', callId: 'mc-1', ok: true, result: '"x"' });
  await until(() => over.length > 0);
  assert.equal(over.length, 1);
  assert.match(over[0].why, new RegExp(`more than ${MESSAGE_BUDGET} messages`));
  assert.equal(over[0].messages, MESSAGE_BUDGET + 1);
  assert.deepEqual(got, ['{"type":"tool_result","callId":"mc-1","ok":true,"result":"\\"x\\""}']); // the owed answer, once
  const r = JSON.parse(end.refused());
  assert.equal(r.dropped, MESSAGE_BUDGET);
  assert.equal(r.refused[MINI_APP_UNSOLICITED_ANSWER], MESSAGE_BUDGET);
  assert.equal(r.samples.length, MAX_PORT_REFUSAL_SAMPLES);
  assert.throws(() => end.post('{}', '', false));
  port2.close();
});

test('what is not an answer is refused by name; a cancel takes the owed answer back', async () => {
  const { port1, port2 } = new MessageChannel();
  const got = [];
  const end = openAppPort(port1, (text) => got.push(text), () => assert.fail('over'));
  end.post('{"type":"call_tool","callId":"mc-2"}', 'mc-2', true);
  end.post('{"type":"call_tool","callId":"mc-3"}', 'mc-3', true);
  end.post('{"type":"cancel_call","callId":"mc-2"}', 'mc-2', false);
  port2.postMessage({ type: 'tool_result', callId: 'mc-2', ok: true, result: '1' }); // cancelled
  port2.postMessage({ type: 'tool_result', callId: 'mc-3', ok: true, result: '1', error: 'both' });
  port2.postMessage('tool_result');
  port2.postMessage({ type: 'tool_result', callId: 'mc-3', refused: 'tool-timeout', why: 'says the app' });
  port2.postMessage({ type: 'tool_result', callId: 'mc-3', ok: false, error: 'it failed' });
  port2.postMessage({ type: 'tool_result', callId: 'mc-3', ok: false, error: 'again' });
  await until(() => JSON.parse(end.refused()).dropped === 5);
  assert.deepEqual(got, ['{"type":"tool_result","callId":"mc-3","ok":false,"error":"it failed"}']);
  const r = JSON.parse(end.refused());
  assert.deepEqual(r.refused, { [MINI_APP_UNSOLICITED_ANSWER]: 2, [MALFORMED_ANSWER]: 3 });
  assert.match(r.samples[0].why, /no call mc-2 waits on this port/);
  assert.equal(shaped({ type: 'tool_result', callId: 'x', ok: true, result: 'null' }), true);
  assert.equal(shaped({ type: 'tool_result', callId: '', ok: true, result: 'null' }), false);
  end.close();
  port2.close();
});

test('an owed answer crosses into Go as its own fields, its text cut just past the output bound', async () => {
  const { port1, port2 } = new MessageChannel();
  const got = [];
  const end = openAppPort(port1, (text) => got.push(text), () => assert.fail('over'));
  end.post('{"type":"call_tool","callId":"mc-4"}', 'mc-4', true);
  end.post('{"type":"call_tool","callId":"mc-5"}', 'mc-5', true);
  const big = JSON.stringify('x'.repeat(4 * MAX_OUTPUT_BYTES));
  port2.postMessage({ type: 'tool_result', callId: 'mc-4', ok: true, result: big, beside: 'y'.repeat(MAX_OUTPUT_BYTES) });
  port2.postMessage({ type: 'tool_result', callId: 'mc-5', ok: false, error: 'e'.repeat(2 * MAX_OUTPUT_BYTES) });
  await until(() => got.length === 2);
  const [ok, failed] = got.map((text) => JSON.parse(text));
  assert.deepEqual(Object.keys(ok), ['type', 'callId', 'ok', 'result']);
  assert.equal(ok.result, big.slice(0, MAX_OUTPUT_BYTES + 1)); // still over the bound: Go refuses it by name
  assert.ok(new TextEncoder().encode(ok.result).length > MAX_OUTPUT_BYTES);
  assert.equal(failed.error.length, MAX_OUTPUT_BYTES + 1);
  assert.equal(crossing({ type: 'tool_result', callId: 'c', ok: true, result: '1' }).result, '1');
  end.close();
  port2.close();
});
