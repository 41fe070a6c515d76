/** Platform settings (admins; `expectedVersion` conflicts shown and resolved). */
import { useEffect, useState } from 'preact/hooks';
import { api, IsletApiError, type PlatformSettings, problemText } from '../api.ts';
import { Problem } from './util.tsx';

type CodeMode = PlatformSettings['codeMode'];
const FIELDS: Array<{ key: keyof CodeMode; label: string }> = [
  { key: 'timeoutMs', label: 'Time budget (ms)' },
  { key: 'memoryMb', label: 'Memory (MB)' },
  { key: 'outputBytes', label: 'Output limit (bytes)' },
];

export function SettingsPage() {
  const [loaded, setLoaded] = useState<PlatformSettings | null>(null);
  const [draft, setDraft] = useState<CodeMode | null>(null);
  const [conflict, setConflict] = useState<PlatformSettings | null>(null);
  const [error, setError] = useState('');
  const [saved, setSaved] = useState('');
  const load = () =>
    api<PlatformSettings>('GET', '/v1/platform/settings').then(
      (s) => {
        setLoaded(s);
        setDraft(s.codeMode);
        setConflict(null);
      },
      (err) => setError(problemText(err)),
    );
  useEffect(() => {
    void load();
  }, []);
  async function save(expectedVersion: number) {
    if (!draft) return;
    setError('');
    setSaved('');
    try {
      // Only what this admin changed: saving over a newer version keeps the other admin's changes.
      const changed = Object.fromEntries(
        Object.entries(draft).filter(([k, v]) => loaded?.codeMode[k as keyof CodeMode] !== v),
      );
      const s = await api<PlatformSettings>('PATCH', '/v1/platform/settings', {
        expectedVersion,
        codeMode: changed,
      });
      setLoaded(s);
      setDraft(s.codeMode);
      setConflict(null);
      setSaved(`Saved as version ${s.version}.`);
    } catch (err) {
      const p = err instanceof IsletApiError ? err.problem : undefined;
      if (p?.code === 'version-conflict' && p.current) setConflict(p.current as PlatformSettings);
      else setError(problemText(err));
    }
  }
  if (!loaded || !draft) return error ? <Problem>{error}</Problem> : <p>Loading…</p>;
  return (
    <section>
      <h1>Platform settings</h1>
      <p class="hint">Version {loaded.version}. Changing them needs a key with platform.admin.</p>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          void save(loaded.version);
        }}
      >
        <label class="check">
          <input
            type="checkbox"
            checked={draft.enabled}
            onChange={(e) => setDraft({ ...draft, enabled: e.currentTarget.checked })}
          />{' '}
          Code Mode enabled
        </label>
        {FIELDS.map((f) => (
          <p key={f.key}>
            <label for={`s-${f.key}`}>{f.label}</label>
            <input
              id={`s-${f.key}`}
              type="number"
              inputMode="numeric"
              value={String(draft[f.key])}
              onInput={(e) => setDraft({ ...draft, [f.key]: Number(e.currentTarget.value) })}
            />
          </p>
        ))}
        <button type="submit">Save</button>
      </form>
      {saved && <p role="status">{saved}</p>}
      {error && <Problem>{error}</Problem>}
      {conflict && (
        <div class="card conflict" role="alert">
          <h2>Someone saved version {conflict.version} meanwhile</h2>
          <p>
            Your edit was based on version {loaded.version}. Applying yours changes only the settings you
            edited.
          </p>
          <table>
            <thead>
              <tr>
                <th scope="col">Setting</th>
                <th scope="col">Version {conflict.version}</th>
                <th scope="col">Yours</th>
              </tr>
            </thead>
            <tbody>
              {(['enabled', ...FIELDS.map((f) => f.key)] as Array<keyof CodeMode>).map((k) => (
                <tr key={k} class={conflict.codeMode[k] !== draft[k] ? 'differs' : ''}>
                  <th scope="row">{k}</th>
                  <td>{String(conflict.codeMode[k])}</td>
                  <td>{String(draft[k])}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <div class="actions">
            <button type="button" onClick={() => void save(conflict.version)}>
              Apply my changes to version {conflict.version}
            </button>
            <button type="button" onClick={() => void load()}>
              Discard mine, load version {conflict.version}
            </button>
          </div>
        </div>
      )}
    </section>
  );
}
