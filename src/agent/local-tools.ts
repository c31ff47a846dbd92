/**
 * In-process tools: what a world offers a run without an MCP server (the memory world's decision
 * agent: `memory_diff`, `notify_user`, `goals_add`, …). They go through the same permission modes
 * and approval gate as MCP tools; their input is validated by zod before `execute` sees it.
 */
import { z } from 'zod';
import type { ToolAccess } from './permissions.js';

/** The pseudo-server name local tools carry in approvals and recorded steps. */
export const LOCAL_TOOL_SERVER = 'local';

export interface LocalTool<I = unknown> {
  /** The name the model sees: lower-case letters, digits and underscores. */
  name: string;
  description: string;
  input: z.ZodType<I>;
  /** `write`: external effects (an approval in `tainted` mode, hidden in `analysis`). */
  access: ToolAccess;
  /** The tool's answer to the model (fenced by the runner). Throw for an error the model should see. */
  execute(input: I, opts: { signal: AbortSignal }): Promise<string>;
}

/** `defineLocalTool({...})` keeps the input type between the schema and `execute`. */
export function defineLocalTool<S extends z.ZodType>(tool: Omit<LocalTool<z.output<S>>, 'input'> & { input: S }): LocalTool {
  return tool as unknown as LocalTool;
}

const NAME = /^[a-z][a-z0-9_]{0,63}$/;

export function checkLocalTools(tools: readonly LocalTool[]): void {
  const seen = new Set<string>();
  for (const t of tools) {
    if (!NAME.test(t.name)) throw new Error(`local tool name "${t.name}" must be lower-case letters, digits and underscores`);
    if (seen.has(t.name)) throw new Error(`local tool "${t.name}" is given twice`);
    seen.add(t.name);
  }
}

/** The JSON schema the model is shown for a local tool's input. */
export function localToolJsonSchema(tool: LocalTool): Record<string, unknown> {
  return z.toJSONSchema(tool.input, { target: 'draft-7', unrepresentable: 'any' }) as Record<string, unknown>;
}
