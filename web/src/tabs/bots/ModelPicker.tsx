/**
 * A bot's model, picked from what is configured (issue 23): the two model roles, each shown
 * with the model its endpoint serves (`subconscious.status`'s `structured_output` lists them),
 * or another model on one of those endpoints, typed by name. The value is the spec `bots.create`
 * takes: `agent`, `local`, `agent:<model>` or `local:<model>`.
 */
import { useState } from 'react';
import type { ModelRole } from '../../../../src/protocol/index.js';
import { useShell } from '../../shell/context.js';

const ROLES: readonly ModelRole[] = ['agent', 'local'];
const ROLE_WORDS: Record<ModelRole, string> = { agent: 'Agent (full effort)', local: 'Local (cheap)' };
const OTHER = '__other';

/** `local:llama3.2` → {role: local, model: llama3.2}; `agent` → {role: agent, model: null}; a bare name is on the agent endpoint. */
export function parseModelSpec(spec: string): { role: ModelRole; model: string | null } {
  const s = spec.trim();
  if (s === 'agent' || s === 'local') return { role: s, model: null };
  const m = /^(agent|local):(.+)$/.exec(s);
  if (m) return { role: m[1] as ModelRole, model: m[2]!.trim() };
  return { role: 'agent', model: s || null };
}

export function ModelPicker(props: { id: string; value: string; onChange: (spec: string) => void; invalid: boolean; describedBy: string | undefined }) {
  const { status } = useShell();
  const endpoints = new Map((status.data?.structured_output ?? []).map((e) => [e.role, e]));
  const parsed = parseModelSpec(props.value);
  const [other, setOther] = useState(parsed.model !== null);
  const choice = other ? OTHER : parsed.role;
  const served = (role: ModelRole) => endpoints.get(role)?.model;

  return (
    <div className="model-picker">
      <select
        id={props.id}
        value={choice}
        aria-invalid={props.invalid}
        aria-describedby={props.describedBy}
        data-testid="bot-model"
        onChange={(e) => {
          const v = e.target.value;
          if (v === OTHER) {
            setOther(true);
            props.onChange(`${parsed.role}:${parsed.model ?? ''}`);
          } else {
            setOther(false);
            props.onChange(v);
          }
        }}
      >
        {ROLES.map((r) => (
          <option key={r} value={r}>
            {ROLE_WORDS[r]}
            {served(r) ? ` — ${served(r)}` : ''}
            {r === 'agent' ? ' (the default)' : ''}
          </option>
        ))}
        <option value={OTHER}>Another model on one of these endpoints…</option>
      </select>
      {other && (
        <div className="model-other" data-testid="bot-model-other">
          <label>
            On endpoint{' '}
            <select value={parsed.role} onChange={(e) => props.onChange(`${e.target.value}:${parsed.model ?? ''}`)}>
              {ROLES.map((r) => (
                <option key={r} value={r}>
                  {ROLE_WORDS[r]}
                  {endpoints.get(r) ? ` at ${endpoints.get(r)!.base_url}` : ''}
                </option>
              ))}
            </select>
          </label>
          <label>
            Which model{' '}
            <input
              type="text"
              spellCheck={false}
              value={parsed.model ?? ''}
              placeholder={served(parsed.role) ?? 'a model that endpoint serves'}
              aria-invalid={props.invalid}
              onChange={(e) => props.onChange(`${parsed.role}:${e.target.value}`)}
            />
          </label>
        </div>
      )}
    </div>
  );
}
