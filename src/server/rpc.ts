// The JSON-RPC dispatcher lives in core/ (worlds and agent define methods without importing server/).
export * from '../core/rpc.js';
