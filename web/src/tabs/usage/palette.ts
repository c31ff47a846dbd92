/** Series colours for the charts; a key keeps its colour because keys come sorted from the server. */
const COLORS = ['#4f7cff', '#2e9e6b', '#e0a100', '#ff6f61', '#8e6cef', '#1aa5b8', '#c2569b', '#7a8699'];

export function colorFor(keys: readonly string[], key: string): string {
  const i = keys.indexOf(key);
  return COLORS[(i < 0 ? keys.length : i) % COLORS.length]!;
}
