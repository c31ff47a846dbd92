/**
 * JSON Schemas of the protocol's result and event types. Params are zod (their schemas come from
 * `z.toJSONSchema` at run time); results and event payloads are TypeScript types only, so this
 * reads them with the TypeScript checker from `ProductMethods` / `ProductEvents` and writes
 * `dist/protocol/schemas.json`, which the daemon's `/openapi.json` (src/app/openapi.ts) uses, and
 * the shipped daemon's `dist/openapi.json`. `npm run build` runs it after `tsc` (and the tests'
 * global setup when src/protocol/ changed).
 *
 * Named types (type aliases, interfaces) become `#/components/schemas/<Name>` (the name of a
 * second, different type with the same name gets its file's name in front: `bots_Task`).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { appContracts } from '../src/app/contracts.js';
import { productModules } from '../src/app/modules.js';
import { buildOpenApi, type ProtocolSchemas } from '../src/protocol/openapi.js';

type Schema = Record<string, unknown>;

const ROOT = path.resolve(fileURLToPath(new URL('..', import.meta.url)));
export const SCHEMAS_FILE = path.join(ROOT, 'dist', 'protocol', 'schemas.json');
/** The shipped daemon's OpenAPI (the package exports it as `subconscious-engine/openapi.json`). */
export const OPENAPI_FILE = path.join(ROOT, 'dist', 'openapi.json');

/** The product daemon's OpenAPI document, from its contracts and these schemas. */
export function productOpenApi(schemas: ProtocolSchemas): Record<string, unknown> {
  const contracts = [...appContracts, ...productModules.map((m) => m.contract)];
  const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  return buildOpenApi({
    version,
    methods: contracts.flatMap((c) => Object.entries(c.methods).map(([name, spec]) => ({ name, description: spec.description, params: spec.params }))),
    events: contracts.flatMap((c) => c.events),
    schemas,
  });
}

export function protocolSchemas(entry = path.join(ROOT, 'src', 'protocol', 'index.ts')): ProtocolSchemas {
  const program = ts.createProgram([entry], {
    strict: true,
    exactOptionalPropertyTypes: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    skipLibCheck: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(entry)!;
  const exports = checker.getExportsOfModule(checker.getSymbolAtLocation(source)!);
  const exported = (name: string) => {
    const symbol = exports.find((s) => s.name === name);
    if (!symbol) throw new Error(`src/protocol/index.ts exports no ${name}`);
    return checker.getDeclaredTypeOfSymbol(symbol);
  };

  const components: Record<string, Schema> = {};
  const names = new Map<ts.Type, string>();
  const taken = new Set<string>();

  const nameOf = (type: ts.Type): string | null => {
    const symbol =
      type.aliasSymbol ?? (type.flags & ts.TypeFlags.Object && (type as ts.ObjectType).objectFlags & ts.ObjectFlags.Interface ? type.symbol : undefined);
    if (!symbol || type.aliasTypeArguments?.length) return null;
    const known = names.get(type);
    if (known) return known;
    let name = symbol.name;
    if (taken.has(name)) {
      const file = path.basename(symbol.declarations?.[0]?.getSourceFile().fileName ?? 'x', '.ts').replace(/\W/g, '_');
      name = `${file}_${name}`;
      for (let i = 2; taken.has(name); i++) name = `${file}_${symbol.name}_${i}`;
    }
    return name;
  };

  const describe = (symbol: ts.Symbol): string | undefined => {
    const text = ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim();
    return text || undefined;
  };

  const withoutUndefined = (types: readonly ts.Type[]) => types.filter((t) => !(t.flags & (ts.TypeFlags.Undefined | ts.TypeFlags.Void)));

  const toSchema = (type: ts.Type): Schema => {
    const name = nameOf(type);
    if (name && !isPrimitiveLike(type)) {
      const ref = { $ref: `#/components/schemas/${name}` };
      if (names.has(type)) return ref;
      names.set(type, name);
      taken.add(name);
      components[name] = {}; // reserve first: a recursive type refers to itself
      components[name] = inline(type);
      return ref;
    }
    return inline(type);
  };

  const isPrimitiveLike = (type: ts.Type) =>
    !!(type.flags & (ts.TypeFlags.StringLike | ts.TypeFlags.NumberLike | ts.TypeFlags.BooleanLike | ts.TypeFlags.Null)) ||
    (type.isUnion() &&
      type.types.every((t) => t.flags & (ts.TypeFlags.StringLiteral | ts.TypeFlags.NumberLiteral | ts.TypeFlags.Null | ts.TypeFlags.Undefined)));

  const inline = (type: ts.Type): Schema => {
    const f = type.flags;
    if (f & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return {};
    if (f & ts.TypeFlags.Never) return { not: {} };
    if (f & ts.TypeFlags.Null) return { type: 'null' };
    if (f & ts.TypeFlags.StringLiteral) return { type: 'string', const: (type as ts.StringLiteralType).value };
    if (f & ts.TypeFlags.NumberLiteral) return { type: 'number', const: (type as ts.NumberLiteralType).value };
    if (f & ts.TypeFlags.BooleanLiteral) return { type: 'boolean', const: checker.typeToString(type) === 'true' };
    if (f & ts.TypeFlags.String || f & ts.TypeFlags.TemplateLiteral) return { type: 'string' };
    if (f & ts.TypeFlags.Number) return { type: 'number' };
    if (f & ts.TypeFlags.Boolean) return { type: 'boolean' };
    if (type.isUnion()) {
      const members = withoutUndefined(type.types);
      const literals = members.filter((t) => t.flags & (ts.TypeFlags.StringLiteral | ts.TypeFlags.NumberLiteral | ts.TypeFlags.Null));
      const booleans = members.filter((t) => t.flags & ts.TypeFlags.BooleanLiteral);
      const rest = members.filter((t) => !literals.includes(t) && !booleans.includes(t));
      const parts: Schema[] = [];
      if (literals.length === 1 && literals[0]!.flags & ts.TypeFlags.Null) parts.push({ type: 'null' });
      else if (literals.length) parts.push({ enum: literals.map((t) => (t.flags & ts.TypeFlags.Null ? null : (t as ts.LiteralType).value)) });
      if (booleans.length === 2) parts.push({ type: 'boolean' });
      else parts.push(...booleans.map(inline));
      parts.push(...rest.map(toSchema));
      return parts.length === 1 ? parts[0]! : { anyOf: parts };
    }
    if (checker.isTupleType(type)) {
      const items = checker.getTypeArguments(type as ts.TypeReference).map(toSchema);
      return { type: 'array', prefixItems: items, minItems: items.length, maxItems: items.length };
    }
    if (checker.isArrayType(type)) return { type: 'array', items: toSchema(checker.getTypeArguments(type as ts.TypeReference)[0]!) };
    if (f & ts.TypeFlags.Object || type.isIntersection()) {
      const properties: Record<string, Schema> = {};
      const required: string[] = [];
      for (const prop of checker.getPropertiesOfType(type)) {
        if (prop.name.startsWith('__')) continue;
        const propType = checker.getTypeOfSymbol(prop);
        if (propType.getCallSignatures().length) continue;
        const schema = toSchema(propType);
        const doc = describe(prop);
        properties[prop.name] = doc && !schema.$ref ? { ...schema, description: doc } : doc ? { allOf: [schema], description: doc } : schema;
        const optional = !!(prop.flags & ts.SymbolFlags.Optional) || (propType.isUnion() && propType.types.some((t) => t.flags & ts.TypeFlags.Undefined));
        if (!optional) required.push(prop.name);
      }
      const schema: Schema = { type: 'object', properties };
      if (required.length) schema.required = required;
      const index = checker.getIndexInfoOfType(type, ts.IndexKind.String);
      if (index) schema.additionalProperties = toSchema(index.type);
      return schema;
    }
    return {};
  };

  const resultsOf = (map: ts.Type) =>
    Object.fromEntries(
      checker.getPropertiesOfType(map).map((method) => {
        const spec = checker.getTypeOfSymbol(method);
        const result = spec.getProperty('__result');
        if (!result) throw new Error(`${method.name}: no result type (declare it with .returns<Result>())`);
        const type = checker.getTypeOfSymbol(result);
        const members = type.isUnion() ? withoutUndefined(type.types) : [type];
        return [method.name, members.length === 1 ? toSchema(members[0]!) : inline(type)];
      }),
    );
  const results = resultsOf(exported('ProductMethods'));
  const events = Object.fromEntries(checker.getPropertiesOfType(exported('ProductEvents')).map((e) => [e.name, toSchema(checker.getTypeOfSymbol(e))]));
  const webhooks = { 'runtime.dispatch': toSchema(exported('RuntimeWebhook')) };
  return { results, events, components, webhooks };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  const schemas = protocolSchemas();
  mkdirSync(path.dirname(SCHEMAS_FILE), { recursive: true });
  writeFileSync(SCHEMAS_FILE, JSON.stringify(schemas));
  writeFileSync(OPENAPI_FILE, JSON.stringify(productOpenApi(schemas), null, 2));
  console.log(
    `${path.relative(ROOT, SCHEMAS_FILE)}: ${Object.keys(schemas.results).length} results, ${Object.keys(schemas.events).length} events, ` +
      `${Object.keys(schemas.components).length} named types (${Date.now() - started} ms)`,
  );
}
