/** The steering world's events (payload types live in the protocol, where the page reads them). */
import type { SteeringEvents } from '../../protocol/steering.js';

export type { SteeringEvents } from '../../protocol/steering.js';

export type SteeringEmit = <K extends keyof SteeringEvents & string>(type: K, data: SteeringEvents[K]) => void;
