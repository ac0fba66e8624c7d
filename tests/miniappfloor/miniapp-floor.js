// @ts-nocheck
// The floor of a mini-app tool call from the page's API: the product's four messages on the same
// threads and processes, and nothing else. The page posts a call's JSON text to a dedicated worker
// (miniapp-floor-worker.js, plain JavaScript: no Go, no validation, no registry); the worker posts
// {type: 'call_tool', callId, name, args} on a MessagePort whose other end is held by the app's
// document, a sandboxed srcdoc frame (its own renderer process, as the product's app document
// is); the app runs the tool and posts {type: 'tool_result', callId, ok, result} back on the port;
// the worker posts the answer's text to the page. The app is the product's scoreboard sample
// itself, its webMcp a three-line stand-in for the SDK (no checks, no events, no observers), or
// the product's SDK itself (floor.start's sdk): the SDK's share of a call, without the bridge.
// With floor.start's middle (the address of miniapp-floor-middle.html on another site) the app's
// frame is nested in a frame of that site, where the product's bridge is.
'use strict';
(() => {
  const worker = new Worker('/miniapp-floor-worker.js');
  const pending = new Map();
  let next = 1;
  worker.onmessage = (event) => {
    const answer = JSON.parse(event.data);
    const settle = pending.get(answer.id);
    pending.delete(answer.id);
    if (settle) settle(answer);
  };
  window.floor = {
    ready: false,
    start(html, sdk, style, middle, observed) {
      const channel = new MessageChannel();
      worker.postMessage({ port: channel.port1 }, [channel.port1]);
      const ready = () => { window.floor.ready = true; };
      if (!middle) {
        floorFrame(html, sdk, style, channel.port2, ready, observed);
        return;
      }
      const frame = document.createElement('iframe');
      frame.style.cssText = style || 'width: 480px; height: 360px; border: 0';
      frame.src = middle;
      window.addEventListener('message', (e) => {
        if (e.source !== frame.contentWindow) return;
        if (e.data === 'floor-middle') frame.contentWindow.postMessage({ type: 'floor-load', html, sdk }, '*', [channel.port2]);
        else if (e.data === 'floor-ready') ready();
      });
      document.body.append(frame);
    },
    call(tool, args) {
      const id = next++;
      return new Promise((resolve) => {
        pending.set(id, resolve);
        worker.postMessage(JSON.stringify({ type: 'call', id, method: 'miniapps.call', params: { appId: 'app_scoreboard', tool, args } }));
      });
    },
  };
})();
