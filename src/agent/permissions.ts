/**
 * Permission modes (seed 1, "Approval Gate"): what a run may do with a writing tool.
 *   full      the user asked for the write: writing tools run without approval;
 *   analysis  read-only work: writing tools are not offered to the model at all;
 *   tainted   the run reacts to external content (or nobody asked for a write): every writing
 *             tool call needs a human approval, unless the tool has an `allow_automatically` grant.
 * Read-only tools always run.
 */
import { z } from 'zod';

export const PERMISSION_MODES = ['full', 'analysis', 'tainted'] as const;
export type PermissionMode = (typeof PERMISSION_MODES)[number];
export const permissionModeSchema = z.enum(PERMISSION_MODES);

export type ToolAccess = 'read' | 'write';

/** What the runner does with one tool in one mode. */
export type ToolPolicy = 'run' | 'hidden' | 'needs_approval';

export function toolPolicy(mode: PermissionMode, tool: { access: ToolAccess; allowAutomatically: boolean }): ToolPolicy {
  if (tool.access === 'read') return 'run';
  switch (mode) {
    case 'full':
      return 'run';
    case 'analysis':
      return 'hidden';
    case 'tainted':
      return tool.allowAutomatically ? 'run' : 'needs_approval';
  }
}
