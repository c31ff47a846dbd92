import type { ReactNode } from 'react';

/** A titled region of a tab (labelled for assistive tech by its heading). */
export function Section(props: { id: string; title: string; count?: number | undefined; actions?: ReactNode; children: ReactNode }) {
  const headingId = `${props.id}-heading`;
  return (
    <section className="section" aria-labelledby={headingId} data-testid={props.id}>
      <header className="section-header">
        <h2 id={headingId}>
          {props.title}
          {props.count !== undefined && <span className="count">{props.count}</span>}
        </h2>
        {props.actions}
      </header>
      {props.children}
    </section>
  );
}
