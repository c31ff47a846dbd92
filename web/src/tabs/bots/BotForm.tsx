/**
 * Create or edit a bot: its @name, label, description, persona, model and tools (the MCP
 * servers of `[[mcp.servers]]`, as `mcp.servers` lists them). The daemon's refusal shows under
 * the field it is about; nothing typed is lost.
 */
import { useId, useState, type FormEvent, type ReactNode } from 'react';
import type { Bot } from '../../../../src/protocol/bots.js';
import { call } from '../../api/rpc.js';
import { useShell } from '../../shell/context.js';
import { useLiveRpc } from '../../shell/hooks.js';
import { MessageText } from '../../ui/MessageText.js';
import { fieldError, type FieldError } from './errors.js';
import { ModelPicker } from './ModelPicker.js';

type Field = 'name' | 'label' | 'description' | 'persona' | 'model' | 'tools';
const FIELDS: readonly Field[] = ['name', 'label', 'description', 'persona', 'model', 'tools'];

function modelSpec(bot: Bot | undefined): string {
  if (!bot) return 'agent';
  return bot.model ? (bot.model_role === 'agent' ? bot.model : `${bot.model_role}:${bot.model}`) : bot.model_role;
}

export function BotForm(props: { bot?: Bot | undefined; onDone: (bot: Bot | null) => void }) {
  const { bot } = props;
  const { notify } = useShell();
  const ids = useId();
  const servers = useLiveRpc('mcp.servers', {}, ['mcp.changed']);
  const [name, setName] = useState(bot?.name ?? '');
  const [label, setLabel] = useState(bot?.label ?? '');
  const [description, setDescription] = useState(bot?.description ?? '');
  const [persona, setPersona] = useState(bot?.persona ?? '');
  const [model, setModel] = useState(modelSpec(bot));
  const [tools, setTools] = useState<string[]>(bot?.tools ?? []);
  const [error, setError] = useState<FieldError | null>(null);
  const [busy, setBusy] = useState(false);
  const editing = bot !== undefined;
  const available = servers.data?.servers.map((s) => s.name) ?? [];
  // A tool the bot has but the config no longer lists stays visible, so it can be taken off.
  const toolChoices = [...new Set([...available, ...tools])];

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!name.trim()) return setError({ field: 'name', text: 'Give the bot a name: its @mention handle, such as `growth`.' });
    if (/^(agent|local):\s*$/.test(model.trim())) return setError({ field: 'model', text: 'Type the model’s name, or pick one of the configured models.' });
    setBusy(true);
    setError(null);
    const fields = {
      name: name.trim(),
      ...(label.trim() ? { label: label.trim() } : {}),
      description: description.trim(),
      persona: persona.trim(),
      model: model.trim() || 'agent',
      tools,
    };
    try {
      const saved = editing ? await call('bots.update', { bot_id: bot.id, ...fields, label: label.trim() || fields.name }) : await call('bots.create', fields);
      notify(editing ? `Saved @${saved.name}.` : `Created @${saved.name}. Say hello in its thread.`);
      props.onDone(saved);
    } catch (err) {
      const f = fieldError(err);
      setError(f.field && FIELDS.includes(f.field as Field) ? f : { field: null, text: f.text });
    } finally {
      setBusy(false);
    }
  };

  const errorFor = (field: Field) => (error?.field === field ? error : null);
  const describedBy = (field: Field, own?: string) => [own, errorFor(field) ? `${ids}-${field}-error` : undefined].filter(Boolean).join(' ') || undefined;
  const fieldErrorText = (field: Field) =>
    errorFor(field) && (
      <p id={`${ids}-${field}-error`} className="coral small field-error" role="alert" data-testid={`bot-form-error-${field}`}>
        <MessageText text={error!.text} />
      </p>
    );

  return (
    <form className="card bot-form" onSubmit={(e) => void submit(e)} aria-labelledby={`${ids}-title`} noValidate data-testid="bot-form">
      <h2 id={`${ids}-title`} tabIndex={-1} data-bots-focus>
        {editing ? `Edit @${bot.name}` : 'New bot'}
      </h2>
      <Row
        label="Name"
        htmlFor={`${ids}-name`}
        help="Its @mention handle: lower-case letters, digits, - or _, starting with a letter."
        helpId={`${ids}-name-help`}
      >
        <input
          id={`${ids}-name`}
          type="text"
          value={name}
          maxLength={32}
          autoComplete="off"
          spellCheck={false}
          onChange={(e) => setName(e.target.value)}
          aria-invalid={errorFor('name') !== null}
          aria-describedby={describedBy('name', `${ids}-name-help`)}
          required
        />
        {fieldErrorText('name')}
      </Row>
      <Row label="Label" htmlFor={`${ids}-label`} help="How it is shown (default: the name)." helpId={`${ids}-label-help`}>
        <input
          id={`${ids}-label`}
          type="text"
          value={label}
          maxLength={80}
          placeholder="Growth lead"
          onChange={(e) => setLabel(e.target.value)}
          aria-invalid={errorFor('label') !== null}
          aria-describedby={describedBy('label', `${ids}-label-help`)}
        />
        {fieldErrorText('label')}
      </Row>
      <Row
        label="Description"
        htmlFor={`${ids}-description`}
        help="What it is for, in a line (other bots of a group see it)."
        helpId={`${ids}-description-help`}
      >
        <input
          id={`${ids}-description`}
          type="text"
          value={description}
          maxLength={1000}
          placeholder="Owns outbound experiments."
          onChange={(e) => setDescription(e.target.value)}
          aria-invalid={errorFor('description') !== null}
          aria-describedby={describedBy('description', `${ids}-description-help`)}
        />
        {fieldErrorText('description')}
      </Row>
      <Row label="Persona" htmlFor={`${ids}-persona`} help="How it works and talks: its standing instructions." helpId={`${ids}-persona-help`}>
        <textarea
          id={`${ids}-persona`}
          rows={4}
          value={persona}
          maxLength={20_000}
          placeholder="You run growth experiments. Report results with numbers; ask before emailing anyone."
          onChange={(e) => setPersona(e.target.value)}
          aria-invalid={errorFor('persona') !== null}
          aria-describedby={describedBy('persona', `${ids}-persona-help`)}
        />
        {fieldErrorText('persona')}
      </Row>
      <Row
        label="Model"
        htmlFor={`${ids}-model`}
        help="Which configured model answers for it: the agent endpoint (full effort, the default) or the local one (cheap), or another model served by one of them."
        helpId={`${ids}-model-help`}
      >
        <ModelPicker
          id={`${ids}-model`}
          value={model}
          onChange={setModel}
          invalid={errorFor('model') !== null}
          describedBy={describedBy('model', `${ids}-model-help`)}
        />
        {fieldErrorText('model')}
      </Row>
      <fieldset className="bot-tools" aria-describedby={describedBy('tools', `${ids}-tools-help`)} aria-invalid={errorFor('tools') !== null}>
        <legend>Tools</legend>
        <p id={`${ids}-tools-help`} className="muted small">
          The MCP servers it may use. A tool that changes something asks you first.
        </p>
        {servers.data && toolChoices.length === 0 && (
          <p className="muted small">
            No MCP servers are configured. Add them as <code>[[mcp.servers]]</code> in <code>subconscious.toml</code>; a bot without tools can still talk.
          </p>
        )}
        {!servers.data && servers.error === undefined && <p className="muted small">Loading the tool servers…</p>}
        {toolChoices.map((t) => (
          <label key={t} className="checkbox">
            <input
              type="checkbox"
              checked={tools.includes(t)}
              onChange={(e) => setTools((cur) => (e.target.checked ? [...cur, t] : cur.filter((x) => x !== t)))}
            />
            {t}
            {!available.includes(t) && servers.data ? <span className="muted small"> (no longer configured)</span> : null}
          </label>
        ))}
        {fieldErrorText('tools')}
      </fieldset>
      {error && error.field === null && (
        <p className="coral small" role="alert" data-testid="bot-form-error">
          <MessageText text={error.text} />
        </p>
      )}
      <div className="form-actions">
        <button type="submit" className="primary" disabled={busy}>
          {editing ? 'Save' : 'Create bot'}
        </button>
        <button type="button" onClick={() => props.onDone(editing ? bot : null)}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function Row(props: { label: string; htmlFor: string; help: string; helpId: string; children: ReactNode }) {
  return (
    <div className="form-row">
      <label htmlFor={props.htmlFor}>{props.label}</label>
      <div className="form-control">
        {props.children}
        <p id={props.helpId} className="muted small">
          {props.help}
        </p>
      </div>
    </div>
  );
}
