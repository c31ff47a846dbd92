/**
 * Kysely's Postgres dialect with one change to what it compiles: `x in (…values)` goes as
 * `x = any($1)` (and `not in` as `<> all($1)`), the list bound as one array. A list of 1,000 ids
 * was 1,000 parameters that Postgres parsed and planned each time (a triage pass sends several):
 * as one array the same read took half the time (1.75 → 0.85 ms for 1,000 bots' follow-ups), and
 * its text no longer depends on the list's length. Lists of expressions, tuples and literals
 * compile as before.
 *
 * A list of only strings or only finite numbers is bound as the array's text (`{"a","b"}`), made
 * here in one join: pg's own array writer builds it a character run at a time (a triage pass
 * binds seven lists of 1,000 ids: 1.7 MB of garbage and ~1 ms of CPU). Postgres reads the text
 * as the array type the comparison needs, as it does pg's.
 */
import { OperatorNode, PostgresDialect, PostgresQueryCompiler, PrimitiveValueListNode, type BinaryOperationNode, type QueryCompiler } from 'kysely';

const AS_ARRAY = { in: ' = any(', 'not in': ' <> all(' } as const;

export class ArrayListCompiler extends PostgresQueryCompiler {
  protected override visitBinaryOperation(node: BinaryOperationNode): void {
    const { operator, rightOperand } = node;
    const op = OperatorNode.is(operator) ? operator.operator : undefined;
    if ((op === 'in' || op === 'not in') && PrimitiveValueListNode.is(rightOperand)) {
      this.visitNode(node.leftOperand);
      this.append(AS_ARRAY[op]);
      this.appendValue(arrayText(rightOperand.values) ?? [...rightOperand.values]);
      this.append(')');
      return;
    }
    super.visitBinaryOperation(node);
  }
}

const NEEDS_ESCAPE = /["\\]/;
const ESCAPED = /["\\]/g;

/** Postgres' array text of a list of only strings or only finite numbers; undefined for any other list. */
export function arrayText(values: readonly unknown[]): string | undefined {
  if (values.length === 0) return undefined;
  if (values.every((v) => typeof v === 'string')) {
    const quoted = (values as readonly string[]).map((v) => (NEEDS_ESCAPE.test(v) ? v.replace(ESCAPED, '\\$&') : v));
    return `{"${quoted.join('","')}"}`;
  }
  if (values.every((v) => typeof v === 'number' && Number.isFinite(v))) return `{${values.join(',')}}`;
  return undefined;
}

export class ArrayListPostgresDialect extends PostgresDialect {
  override createQueryCompiler(): QueryCompiler {
    return new ArrayListCompiler();
  }
}
