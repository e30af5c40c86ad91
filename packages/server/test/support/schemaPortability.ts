/**
 * The schema portability check MCP Inspector runs on every listed tool (its `schemaLint`, "Schema portability" in
 * the tool panel, `--strict` in its CLI), written from its rules, and the description check of the tool list:
 *
 * - `boolean-schema`: a bare `true`/`false` where a schema goes (the `additionalProperties` family excepted);
 * - `type-union`: `type` as an array of type names (`["string", "null"]`), which several clients read as one string;
 * - `untyped-schema`: a schema that constrains nothing (`{}`, only annotations, only `$defs`, a lone if/then/else);
 * - `remote-ref`: a `$ref` that is not local (`#…`) while no `$id` is declared.
 */

export interface Finding {
  readonly rule: "boolean-schema" | "type-union" | "untyped-schema" | "remote-ref"
  readonly path: string
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const TYPE_NAMES = new Set(["string", "number", "integer", "boolean", "object", "array", "null"])

/** Keywords that constrain the value on their own; anything else (annotations, `$defs`, unknown words) does not. */
const CONSTRAINING = new Set([
  "type", "enum", "const", "$ref", "properties", "patternProperties", "additionalProperties", "unevaluatedProperties",
  "required", "minProperties", "maxProperties", "propertyNames", "dependentRequired", "dependentSchemas", "dependencies",
  "items", "prefixItems", "additionalItems", "unevaluatedItems", "contains", "minItems", "maxItems", "uniqueItems",
  "minContains", "maxContains", "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
  "exclusiveMaximum", "multipleOf", "anyOf", "oneOf", "allOf", "not"
])

/** Keywords whose value is a map of schemas, a list of schemas, or one schema. */
const SCHEMA_MAPS = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]
const SCHEMA_LISTS = ["anyOf", "oneOf", "allOf", "prefixItems"]
const SCHEMAS = ["additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems", "propertyNames",
  "contains", "if", "then", "else", "not"]
/** Where a bare boolean is an ordinary spelling (allow all, forbid all), not a schema a client chokes on. */
const BOOLEAN_OK = new Set(["additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems"])

const isWellFormedUnion = (type: ReadonlyArray<unknown>): boolean =>
  type.length > 0 && type.every((t) => typeof t === "string" && TYPE_NAMES.has(t)) && new Set(type).size === type.length

const constrains = (schema: Record<string, unknown>): boolean =>
  Object.keys(schema).some((key) => CONSTRAINING.has(key)) || ("if" in schema && ("then" in schema || "else" in schema))

const declaresId = (node: unknown): boolean =>
  Array.isArray(node) ? node.some(declaresId) : isRecord(node) && (typeof node["$id"] === "string" || Object.values(node).some(declaresId))

const walk = (node: unknown, path: string, position: string, hasId: boolean, findings: Array<Finding>): void => {
  if (typeof node === "boolean") {
    if (!BOOLEAN_OK.has(position)) findings.push({ rule: "boolean-schema", path })
    return
  }
  if (!isRecord(node)) return
  const type = node["type"]
  if (Array.isArray(type) && isWellFormedUnion(type)) findings.push({ rule: "type-union", path })
  // `{"not": {}}` (nothing matches) is the spelling the check itself recommends for a forbidden property.
  if (!constrains(node) && position !== "not") findings.push({ rule: "untyped-schema", path })
  const ref = node["$ref"]
  if (typeof ref === "string" && ref.length > 0 && !ref.startsWith("#") && !hasId) findings.push({ rule: "remote-ref", path })
  for (const key of SCHEMA_MAPS) {
    const map = node[key]
    if (isRecord(map)) for (const [name, schema] of Object.entries(map)) walk(schema, `${path}.${key}.${name}`, key, hasId, findings)
  }
  for (const key of SCHEMA_LISTS) {
    const list = node[key]
    if (Array.isArray(list)) list.forEach((schema, i) => walk(schema, `${path}.${key}[${i}]`, key, hasId, findings))
  }
  for (const key of SCHEMAS) if (key in node) walk(node[key], `${path}.${key}`, key, hasId, findings)
  const items = node["items"]
  if (Array.isArray(items)) items.forEach((schema, i) => walk(schema, `${path}.items[${i}]`, "items", hasId, findings))
  else if (items !== undefined) walk(items, `${path}.items`, "items", hasId, findings)
}

/** What MCP Inspector would flag in a tool's input and output schemas, inputSchema first. */
export const portabilityFindings = (tool: { readonly inputSchema: unknown; readonly outputSchema?: unknown }): ReadonlyArray<Finding> => {
  const findings: Array<Finding> = []
  walk(tool.inputSchema, "inputSchema", "", declaresId(tool.inputSchema), findings)
  if (tool.outputSchema !== undefined) walk(tool.outputSchema, "outputSchema", "", declaresId(tool.outputSchema), findings)
  return findings
}

/** Every property of an input schema, nested ones too (items of arrays, `$defs`), by path, without a description. */
export const undescribedFields = (inputSchema: unknown): ReadonlyArray<string> => {
  const missing: Array<string> = []
  const visit = (node: unknown, path: string): void => {
    if (Array.isArray(node)) return node.forEach((item, i) => visit(item, `${path}[${i}]`))
    if (!isRecord(node)) return
    for (const [key, value] of Object.entries(node)) {
      if (key === "properties" && isRecord(value)) {
        for (const [name, schema] of Object.entries(value)) {
          if (!(isRecord(schema) && typeof schema["description"] === "string" && schema["description"].length > 0)) missing.push(`${path}.${name}`)
          visit(schema, `${path}.${name}`)
        }
      } else {
        visit(value, `${path}/${key}`)
      }
    }
  }
  visit(inputSchema, "")
  return missing
}
