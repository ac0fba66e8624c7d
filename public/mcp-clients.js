// @ts-check
// The MCP clients panel: the clients the host minted a bearer for (relay mcp-token NAME), each with
// the date it was minted and a Revoke button, which revokes the bearer and closes the client's
// sessions at once. Minting needs the host token, so it is not done here. It talks to the relay's
// /api/mcp/clients routes (same origin); a client's bearer never reaches the page.
import { byId, node } from './dom.js';
import { relay } from './http.js';

/**
 * Client is one MCP client as GET /api/mcp/clients lists it.
 * @typedef {{name: string, created: string}} Client
 */

/**
 * startMCPClients runs the panel.
 * @param {{confirmAction: (text: string, verb: string) => Promise<boolean>, notify: (err: unknown) => void}} services
 */
export function startMCPClients(services) {
  const list = byId('mcp-clients');
  const note = byId('mcp-note');
  const refresh = byId('mcp-refresh');

  async function load() {
    const answer = await relay('/api/mcp/clients');
    if (!answer.ok) {
      note.textContent = `${answer.refused}: ${answer.why}`;
      return;
    }
    /** @type {Client[]} */
    const clients = answer.clients;
    list.replaceChildren();
    for (const c of clients) {
      const li = node('li', 'mcp-client');
      li.dataset.name = c.name;
      const revoke = node('button', 'danger revoke', 'Revoke');
      revoke.type = 'button';
      revoke.addEventListener('click', async () => {
        if (!(await services.confirmAction(`Revoke MCP client "${c.name}"? Its bearer stops working at once.`, 'Revoke'))) return;
        const done = await relay(`/api/mcp/clients/${encodeURIComponent(c.name)}`, { method: 'DELETE' });
        if (!done.ok) services.notify(new Error(`${done.refused}: ${done.why}`));
        await load();
      });
      li.append(node('span', 'name', c.name), node('span', 'created', `since ${new Date(c.created).toLocaleString()}`), revoke);
      list.append(li);
    }
    note.textContent = clients.length === 0
      ? 'No MCP client holds a bearer. The host mints one with: relay mcp-token NAME'
      : 'Programs that use this workspace through /mcp. What they delete still asks you here.';
  }

  refresh.addEventListener('click', () => load().catch(services.notify));
  load().catch(services.notify);
  return Object.freeze({ reload: load });
}
