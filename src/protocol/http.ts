/**
 * The daemon's plain HTTP answers beside JSON-RPC: `/readyz` and the 404 of an unknown path.
 * Browser-safe types, shared by the server and the typed client.
 */

/** One readiness check: `detail` says what is wrong (or what was found). */
export type ReadyCheck = { ok: boolean; detail: string | null };

/**
 * `GET /readyz`: 200 when every check passes, else 503 with the same body. Checks: `store` (the
 * database answers), `migrations` (every migration is applied), `model_local`, `model_agent`
 * (each model endpoint answers its probe).
 */
export type ReadyReport = { ready: boolean; checks: Record<string, ReadyCheck> };

/** A path the daemon does not serve: 404 with this body (never the page). */
export type NotFoundBody = { error: 'not_found'; message: string };
