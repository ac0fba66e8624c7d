// @ts-nocheck
// The floor's worker (see miniapp-floor.js): a call's text in, the app's port out and back, the
// answer's text to the page. Its one bookkeeping is the call ids the app owes.
'use strict';
let port = null;
const owed = new Map();
let next = 1;
self.onmessage = (event) => {
  if (typeof event.data !== 'string') {
    port = event.data.port;
    port.onmessage = (m) => {
      const a = m.data;
      const id = owed.get(a.callId);
      owed.delete(a.callId);
      self.postMessage('{"type":"result","id":' + id + ',"ok":true,"value":{"result":' + a.result + '}}');
    };
    return;
  }
  const call = JSON.parse(event.data);
  const callId = 'call-' + next++;
  owed.set(callId, call.id);
  port.postMessage({ type: 'call_tool', callId, name: call.params.tool, args: call.params.args });
};
