/** The closed-loop harness, by key: the orchestration module provides it; the steering world reads its history. */
import { serviceKey } from '../core/services.js';
import type { HarnessService } from './service.js';

export const HarnessKey = serviceKey<HarnessService>('orchestration.harness');
