// @ts-check
// The relay's event stream (GET /api/events), opened once for the whole page: each event it
// sends is passed on as a page event named relay:<kind> (see events.js), so every live panel
// (the assistant's calls and approvals, the extensions, where the tools act, the history)
// follows the relay without polling. The stream reaches this page whoever holds the workspace,
// even a paired machine environment. When it breaks it is opened again with a backoff, at once
// when the page's channel comes back or the relay answers again, and its hello (the state a page
// starts from) puts every panel back in step.
import { byId } from './dom.js';
import { emit, listen } from './events.js';
import { reachable, relay } from './http.js';

/** The kinds of event the relay sends (internal/core/assistant's events). */
const KINDS = /** @type {const} */ (['hello', 'call', 'approval', 'approval-settled', 'turn', 'tools', 'root', 'extensions', 'runs']);
/** RETRY_MIN_MS and RETRY_MAX_MS bound the pause before the stream is opened again. */
const RETRY_MIN_MS = 1000;
const RETRY_MAX_MS = 15000;

/** startStream opens the relay's event stream for the page. */
export function startStream() {
  /** @type {EventSource | null} */
  let stream = null;
  let timer = 0;
  let pause = RETRY_MIN_MS;

  function open() {
    clearTimeout(timer);
    if (stream) return;
    stream = new EventSource('/api/events');
    for (const kind of KINDS) {
      stream.addEventListener(kind, (e) => {
        let data;
        try { data = JSON.parse(/** @type {MessageEvent} */ (e).data); } catch { return; }
        if (kind === 'hello') {
          pause = RETRY_MIN_MS;
          reachable(true); // the relay is back, whether or not anyone pressed Retry
        }
        emit(/** @type {`relay:${typeof kind}`} */ (`relay:${kind}`), data);
      });
    }
    stream.onerror = () => {
      stream?.close();
      stream = null;
      // Whether the relay is there at all decides what the page says (http.js tells it).
      relay('/api/health').catch(() => {});
      timer = setTimeout(open, pause);
      pause = Math.min(pause * 2, RETRY_MAX_MS);
    };
  }

  listen('channel', ({ state }) => { if (state === 'connected') open(); });
  listen('relay', ({ up }) => { if (up) open(); });
  open();
}

/**
 * startRelayBanner says once, at the top of the page, that the relay is not answering (any
 * request found it so: http.js), with a Retry that asks it again; it goes away as soon as the
 * relay answers anything.
 */
export function startRelayBanner() {
  const banner = byId('relay-down');
  const retry = byId('relay-retry', HTMLButtonElement);
  listen('relay', ({ up }) => { banner.hidden = up; });
  retry.addEventListener('click', async () => {
    retry.disabled = true;
    try {
      await relay('/api/health');
    } catch {
      // Still down: the banner stays, and says so again for a screen reader.
      banner.hidden = true;
      requestAnimationFrame(() => { banner.hidden = false; });
    } finally {
      retry.disabled = false;
    }
  });
}
