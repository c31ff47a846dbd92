/**
 * A refusal from the daemon, by the field it is about, so a form can show it under that input.
 * A SubconsciousError carries `details.field` (`RpcError.field`); bad params (-32602) name the
 * field at the start of the message: `Invalid params for bots.create: name: must be …`.
 */
import { RpcError, explain } from '../../api/rpc.js';

export interface FieldError {
  /** The params field (`name`, `tools`, `text`, `schedule`, …), or null when the error is about no one field. */
  field: string | null;
  /** What to tell the person, without the method's name. */
  text: string;
}

const INVALID_PARAMS = -32602;
const PARAMS_MESSAGE = /^Invalid params for [\w.]+: ([\w.]+|\(params\)): ([\s\S]*)$/;
/** Our own messages start with the field they are about: `text: mention at least one bot …`. */
const FIELD_PREFIX = /^([a-z_]+): ([\s\S]*)$/;

export function fieldError(err: unknown): FieldError {
  if (err instanceof RpcError) {
    if (err.rpcCode === INVALID_PARAMS) {
      const m = PARAMS_MESSAGE.exec(err.message);
      if (m && m[1] !== '(params)') return { field: m[1]!.split('.')[0]!, text: withHint(m[2]!, err.hint) };
    }
    if (err.field) {
      const m = FIELD_PREFIX.exec(err.message);
      return { field: err.field, text: withHint(m && m[1] === err.field ? m[2]! : err.message, err.hint) };
    }
  }
  return { field: null, text: explain(err) };
}

function withHint(text: string, hint: string | undefined): string {
  const t = text.charAt(0).toUpperCase() + text.slice(1);
  return hint ? `${t} — ${hint}` : t;
}
