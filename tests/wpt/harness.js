// The part of web-platform-tests' testharness.js API the webmcp/ files call, written here: tests
// run one after another in the order they were declared, each bounded by testBound, and the
// outcome of each is written as JSON into <pre id="results" data-done> for tests/wpt_test.go:
// {Results: [{Name, OK, Detail}], Errors: [...]}.
'use strict';
(() => {
  const testBound = 5000; // ms a test may take before it counts as timed out
  const queue = [];
  const errors = [];
  window.addEventListener('error', (e) => errors.push(String(e.message)));
  window.addEventListener('unhandledrejection', (e) => errors.push('unhandled rejection: ' + String(e.reason && e.reason.message || e.reason)));

  class AssertionError extends Error {}
  const fail = (msg, desc) => { throw new AssertionError((desc ? desc + ': ' : '') + msg); };
  const show = (v) => { try { return typeof v === 'string' ? JSON.stringify(v) : String(v); } catch { return '?'; } };

  window.assert_true = (v, d) => { if (v !== true) fail(`expected true, got ${show(v)}`, d); };
  window.assert_false = (v, d) => { if (v !== false) fail(`expected false, got ${show(v)}`, d); };
  window.assert_equals = (a, b, d) => { if (!Object.is(a, b)) fail(`expected ${show(b)}, got ${show(a)}`, d); };
  window.assert_unreached = (d) => fail('reached unreachable code', d);
  window.assert_array_equals = (a, b, d) => {
    if (!a || a.length !== b.length) fail(`expected length ${b.length}, got ${a && a.length}: ${show(a)}`, d);
    for (let i = 0; i < b.length; i++) if (!Object.is(a[i], b[i])) fail(`at ${i} expected ${show(b[i])}, got ${show(a[i])}`, d);
  };
  window.assert_object_equals = (a, b, d) => {
    if (JSON.stringify(a) !== JSON.stringify(b)) fail(`expected ${JSON.stringify(b)}, got ${JSON.stringify(a)}`, d);
  };
  const rejects = async (p, check, what, d) => {
    let value;
    try { value = await p; } catch (e) { check(e); return; }
    fail(`expected a rejection with ${what}, got a resolution with ${show(value)}`, d);
  };
  window.promise_rejects_dom = (t, name, p, d) => rejects(p, (e) => {
    if (!(e instanceof DOMException) || e.name !== name) fail(`expected DOMException ${name}, got ${e && e.name}: ${e && e.message}`, d);
  }, name, d);
  window.promise_rejects_js = (t, Ctor, p, d) => rejects(p, (e) => {
    if (!(e instanceof Ctor) || e.constructor !== Ctor) fail(`expected ${Ctor.name}, got ${e && e.name}: ${e && e.message}`, d);
  }, Ctor.name, d);
  window.promise_rejects_exactly = (t, v, p, d) => rejects(p, (e) => {
    if (!Object.is(e, v)) fail(`expected the rejection ${show(v)}, got ${show(e)}`, d);
  }, show(v), d);

  window.promise_test = (fn, name) => queue.push({ fn, name });

  async function runOne({ fn, name }) {
    const cleanups = [];
    let failed = null;
    const t = {
      add_cleanup: (f) => cleanups.push(f),
      unreached_func: (d) => () => { failed = failed || ('reached unreachable code: ' + d); fail('reached unreachable code', d); },
      step_timeout: (f, ms) => setTimeout(f, ms),
      step_func: (f) => f,
    };
    let timer;
    const bound = new Promise((resolve) => { timer = setTimeout(() => resolve('timed out'), testBound); });
    let detail;
    try {
      detail = await Promise.race([Promise.resolve().then(() => fn(t)).then(() => null), bound]);
    } catch (e) {
      detail = e instanceof AssertionError ? e.message : `threw ${e && e.name}: ${e && e.message}`;
    }
    clearTimeout(timer);
    for (const c of cleanups) { try { c(); } catch { /* a cleanup's failure is not the test's */ } }
    if (!detail && failed) detail = failed;
    return { Name: name, OK: !detail, Detail: detail || '' };
  }

  window.addEventListener('load', () => setTimeout(async () => {
    const Results = [];
    for (const test of queue) Results.push(await runOne(test));
    const out = document.createElement('pre');
    out.id = 'results';
    out.textContent = JSON.stringify({ Results, Errors: errors });
    out.dataset.done = '1';
    document.body.appendChild(out);
  }, 0));
})();
