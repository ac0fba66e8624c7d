// @ts-check
// Mini-apps' "Restore samples": the way back from deleting a shipped sample app. The worker puts
// back on the shelf each sample that is not there (miniapps.restoreSamples); the samples that are
// there stay as they are.
import { byId } from './dom.js';

/**
 * startSamples runs "Restore samples"; refresh reads the mini-apps again.
 * @param {import('./dialogs.js').PageServices} services
 * @param {() => void} refresh
 */
export function startSamples({ must, notify }, refresh) {
  const button = /** @type {HTMLButtonElement} */ (byId('apps-restore'));
  const note = byId('apps-note');
  button.addEventListener('click', async () => {
    button.disabled = true;
    try {
      const { restored } = await must('miniapps.restoreSamples', undefined);
      note.textContent = restored.length === 0 ? 'Every sample app is there already.'
        : `Restored ${restored.map((e) => e.title).join(', ')}.`;
      note.hidden = false;
      refresh();
    } catch (err) {
      notify(err);
    } finally {
      button.disabled = false;
    }
  });
}
