/** The harness's events (payload types live in the protocol, where the page reads them). */
import type { OrchestrationEvents } from '../protocol/orchestration.js';

export type { OrchestrationEvents } from '../protocol/orchestration.js';

/** How a module emits its own events (the composition root binds it to the event bus). */
export type Emit<E> = <K extends keyof E & string>(type: K, data: E[K]) => void;

export type OrchestrationEmit = Emit<OrchestrationEvents>;
