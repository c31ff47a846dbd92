/**
 * The model-down banner from the world's own probe (at start and every few minutes), so a person
 * hears that the model is unavailable before any tick fails. When the engine's banner already
 * says so for the same model (after a failed tick), this one stays away.
 */
import type { SystemHealth } from '../../../../src/protocol/index.js';
import type { WorldStatus } from '../../api/types.js';
import { clockTime } from '../../ui/format.js';
import { MessageText } from '../../ui/MessageText.js';

export function HealthBanner(props: { health: SystemHealth | undefined; world: WorldStatus | undefined }) {
  const down = (props.health?.models ?? []).filter((m) => m.available === false);
  const shownByEngine = (role: string) =>
    props.world !== undefined &&
    (role === 'local' ? props.world.provider_available === false : props.world.optional_models_unavailable.some((m) => m.role === role));
  const mine = down.filter((m) => !shownByEngine(m.role));
  if (!mine.length) return null;
  return (
    <div className="banners">
      {mine.map((m) => (
        <div key={m.role} className="banner banner-warn" role="status" data-testid={`banner-model-probe-${m.role}`}>
          <strong>
            The {m.role} model{m.model ? ` (${m.model})` : ''} is unavailable.
          </strong>{' '}
          <span>
            <MessageText text={m.reason ?? 'It did not answer.'} />
          </span>{' '}
          <span className="banner-todo">
            Without it: {m.needed_for}. Start it (for Ollama: <code>ollama serve</code>) or fix <code>[models.{m.role}]</code> in <code>subconscious.toml</code>
            . Checked {m.checked_at ? clockTime(m.checked_at) : 'at start'}; it is checked again every few minutes.
          </span>
        </div>
      ))}
    </div>
  );
}
