// Order Book, a sample external mini-app. Everything Voicebox-specific is in this file: connect
// with the guest library, describe the screen in getContext, register tools with
// document.modelContext, and have this app's own server check the identity token.
'use strict';

const orders = [
  { id: 'A-1001', customer: 'Ada Lovelace', item: 'Mechanical keyboard', status: 'open' },
  { id: 'A-1002', customer: 'Grace Hopper', item: 'Monitor arm', status: 'open' },
  { id: 'A-1003', customer: 'Alan Turing', item: 'USB-C dock', status: 'shipped' },
];
const STATUSES = ['open', 'shipped', 'cancelled'];
let selected = null;

const $ = (id) => document.getElementById(id);

function render() {
  $('orders').replaceChildren(...orders.map((o) => {
    const tr = document.createElement('tr');
    tr.dataset.id = o.id;
    tr.setAttribute('aria-selected', String(o.id === selected));
    for (const [key, value] of Object.entries({ id: o.id, customer: o.customer, item: o.item, status: o.status })) {
      const td = document.createElement('td');
      td.textContent = value;
      if (key === 'status') td.dataset.status = value;
      tr.append(td);
    }
    tr.addEventListener('click', () => select(o.id));
    return tr;
  }));
  $('ask').disabled = selected === null;
}

function select(id) {
  selected = id;
  render();
  host.selectionChanged({ order: orders.find((o) => o.id === id) });
}

// What is on screen now: the host asks on every turn, and the assistant may ask for the data.
function getContext() {
  const open = orders.filter((o) => o.status === 'open').length;
  return {
    title: 'Order Book',
    summary: `${orders.length} orders: ${open} open, ${orders.length - open} closed`,
    selection: selected ? { order: orders.find((o) => o.id === selected) } : null,
    data: { orders },
  };
}

// The relay mints a short-lived token for this app; its own server checks it.
async function checkIdentity(token) {
  const r = await fetch('api/me', { headers: { Authorization: `Bearer ${token}` } });
  const body = await r.json();
  $('identity').dataset.state = r.ok ? 'ok' : 'refused';
  $('identity').textContent = r.ok
    ? `signed in through Voicebox as ${body.sub} (audience ${body.aud}, checked by this app's server)`
    : `the identity token was refused: ${body.error}`;
}

const host = VoiceboxGuest.connect({ name: 'Order Book', version: '1.0.0', auth: true, getContext, onToken: checkIdentity });
host.ready.then((r) => {
  if (!r) {
    $('status').textContent = 'Open this app inside Voicebox to use it with the assistant.';
    return;
  }
  const c = r.hostContext || {};
  $('status').textContent = `connected to ${r.hostInfo.name} · theme ${c.theme} · ${c.locale}`;
  if (!r.auth) $('identity').textContent = 'no identity token';
}, (err) => { $('status').textContent = `not connected: ${err.message}`; });

document.modelContext.registerTool({
  name: 'list_orders',
  description: 'List the orders in the order book, optionally only those with one status.',
  inputSchema: { type: 'object', properties: { status: { type: 'string', enum: STATUSES } } },
  annotations: { readOnlyHint: true },
  execute: ({ status }) => orders.filter((o) => !status || o.status === status),
});

document.modelContext.registerTool({
  name: 'set_order_status',
  description: 'Change the status of one order.',
  inputSchema: {
    type: 'object',
    properties: { id: { type: 'string' }, status: { type: 'string', enum: STATUSES } },
    required: ['id', 'status'],
  },
  execute: ({ id, status }) => {
    const order = orders.find((o) => o.id === id);
    if (!order) throw new Error(`there is no order ${id}`);
    if (!STATUSES.includes(status)) throw new Error(`${status} is not a status`);
    order.status = status;
    render();
    return `Order ${id} is now ${status}.`;
  },
});

$('ask').addEventListener('click', () => {
  host.openChat(`What should happen next with order ${selected}?`);
});

render();
