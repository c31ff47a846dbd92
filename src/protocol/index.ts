/** The protocol: contracts (methods and events) of every module, and the typed client. Browser-safe. */
export * from './contract.js';
export * from './client.js';
