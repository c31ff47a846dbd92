export type DotColor = 'green' | 'gray' | 'amber' | 'coral' | 'blue';

/** A coloured status dot; the meaning is always also given as text next to it. */
export function Dot(props: { color: DotColor; pulse?: boolean | undefined }) {
  return <span className={`dot dot-${props.color}${props.pulse ? ' dot-pulse' : ''}`} aria-hidden="true" />;
}
