// @ts-check
// The page's entry module. It starts the worker that runs the Go engine and each panel of the
// page, giving every panel what it needs explicitly: the worker client (calls, answers, the
// worker's own messages) and the page's dialogs. Panels never reach each other through a global;
// they follow the page's typed events (events.js), among them the relay's event stream
// (stream.js).
//
// window.voicebox is the page's deliberate test-and-debug handle, set here and nowhere else: the
// end-to-end tests (tests/) and a person at the console drive the page through it. No module of
// the page reads it.
//
//   call(method, params, transfer)  one call into the worker: {ok, value} or {ok: false, refused, why}
//   must(method, params, transfer)  the same, returning the value or throwing (err.rule, err.message)
//   on(type, fn)                    listen to the worker's messages of one type; returns what stops it
//   notify(err), confirmAction(text, verb)  the page's notice line and confirmation dialog
//   miniApps, externalApps, assistant, live, history, workspace, where, mcpClients, exporter  the panels' APIs (see their modules)
import { confirmAction, notify } from './dialogs.js';
import { byId } from './dom.js';
import { startAssistant } from './assistant.js';
import { startExport } from './export.js';
import { startExtensions } from './extensions.js';
import { startExternalApps } from './external-apps.js';
import { startHistory } from './history.js';
import { startLive } from './live.js';
import { startMCPClients } from './mcp-clients.js';
import { startMiniApps } from './mini-apps.js';
import { startPlatform } from './platform.js';
import { startFirstSteps } from './start.js';
import { startSamples } from './samples.js';
import { startRelayBanner, startStream } from './stream.js';
import { startWhere } from './where.js';
import { WorkerClient } from './worker-client.js';
import { startWorkspace } from './workspace.js';

const engine = new WorkerClient(new Worker('/worker.js'));

/** @type {import('./dialogs.js').PageServices} */
const services = Object.freeze({
  call: engine.call.bind(engine),
  must: engine.must.bind(engine),
  on: engine.on.bind(engine),
  notify,
  confirmAction,
});

const firstSteps = startFirstSteps();
startRelayBanner();
const where = startWhere();
const platform = startPlatform(engine);
// miniApps is set below; the viewer's "Open as mini-app" is pressed only after start-up.
/** @type {ReturnType<typeof startMiniApps> | null} */
let miniApps = null;
const workspace = startWorkspace(engine, { platform, openAsApp: (path) => (miniApps ? miniApps.launch({ path }) : Promise.resolve()) });
const history = startHistory(services);
miniApps = startMiniApps(services);
startSamples(services, () => byId('apps-refresh').click());
const exporter = startExport(services);
startExtensions({ openView: (extension, tool) => (miniApps ? miniApps.openView(extension, tool) : Promise.resolve()) });
const assistant = startAssistant();
const live = startLive({ typed: assistant.turn, firstSteps });
const externalApps = startExternalApps(services);
const mcpClients = startMCPClients(services);
// The stream opens last, so every panel hears its first hello.
startStream();

/** The page's test-and-debug handle (see the top of this file). */
const handle = Object.freeze({ ...services, miniApps, externalApps, assistant, live, history, workspace, where, mcpClients, exporter });

/** @typedef {typeof handle} VoiceboxHandle */

Object.defineProperty(window, 'voicebox', { value: handle, enumerable: true });
