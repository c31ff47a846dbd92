/**
 * A message from the daemon (an error, a reason, a log result) as text, with its `backticked`
 * spans (commands, config keys, cron values) shown as <code>. Only text nodes are made, so
 * nothing in a message is ever read as HTML.
 */
export function MessageText(props: { text: string }) {
  const parts = props.text.split('`');
  return (
    <>
      {parts.map((part, i) => {
        if (i % 2 === 0) return part;
        // A backtick with no partner (or an empty pair) is kept as it was written.
        const closed = i < parts.length - 1;
        return closed && part ? <code key={i}>{part}</code> : `\`${part}${closed ? '`' : ''}`;
      })}
    </>
  );
}
