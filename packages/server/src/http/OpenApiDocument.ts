/**
 * The OpenAPI 3.1 document, derived from the HttpApi declaration, then completed with what the
 * declaration cannot say: the response headers, the envelope for decode failures (which the platform
 * would document in its own shape), the non-REST route /docs, each operation's summary and access from
 * the operation table, operationIds without the group, the licence and contact, and no schema noise.
 */
import { Api } from "@acs/domain/Api"
import { type Operation, type OperationName, Operations } from "@acs/domain/Operations"
import { OpenApi } from "@effect/platform"

type Json = Record<string, unknown>

const isRecord = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

const header = (description: string, schema: Json = { type: "string" }) => ({ description, schema })

const rateLimitHeaders = {
  "RateLimit-Limit": header("Calls allowed in the current one-minute window for this bucket", { type: "integer" }),
  "RateLimit-Remaining": header("Calls left in the current window", { type: "integer" }),
  "RateLimit-Policy": header("The bucket's policy, e.g. `120;w=60;name=\"read\"`")
}

const requestIdHeader = { "X-Request-Id": header("The request's id, also on every log line it caused") }

const envelopeRef = (name: string) => ({ $ref: `#/components/schemas/${name}` })

const rawRoutes: Json = {
  "/docs": {
    get: {
      tags: ["system"],
      operationId: "docs",
      summary: "Browsable API reference",
      description: "A browsable reference over this document.",
      responses: { "200": { description: "HTML page", content: { "text/html": { schema: { type: "string" } } } } }
    }
  }
}

const isOperationName = (name: string): name is OperationName => Object.hasOwn(Operations, name)

/** What an operation needs and what it costs, from the operation table. */
const accessOf = (operation: Operation): string => {
  const grant = operation.grant === "approve" ? " and the `canApprove` grant" : ""
  const reach = operation.orgLevel === true
    ? " Org-level: a key bound to one account is refused."
    : operation.account === true
    ? " The account must be within the caller's reach."
    : ""
  const charge = operation.bucket === "none"
    ? " Counts against no rate-limit bucket: it is never refused for volume."
    : ` Counts against the \`${operation.bucket}\` rate-limit bucket.`
  return `**Access:** scope \`${operation.scope}\`${grant}.${reach}${charge}`
}

/**
 * The platform names an operation `group.endpoint` unless each endpoint is annotated with its id, and takes a
 * summary only from a per-endpoint annotation. Endpoint names are already the operation names, unique across
 * the API, and the operation table (Operations.ts) already holds each one's summary and access; so the id
 * drops the group (a dot breaks many generators' method names) and the summary and access come from the
 * table here rather than being repeated on each endpoint of Api.ts.
 */
const describeOperation = (operation: Json, seen: Set<string>) => {
  const id = operation["operationId"]
  if (typeof id !== "string") return
  const name = id.slice(id.indexOf(".") + 1)
  if (seen.has(name)) throw new Error(`two operations are named ${name}`)
  seen.add(name)
  operation["operationId"] = name
  if (!isOperationName(name)) return
  const entry: Operation = Operations[name]
  operation["summary"] ??= entry.summary
  const description = operation["description"]
  operation["description"] = [typeof description === "string" ? description : undefined, accessOf(entry)]
    .filter((part) => part !== undefined).join("\n\n")
}

const polishOperation = (operation: Json) => {
  const responses = isRecord(operation["responses"]) ? operation["responses"] : {}
  const id = operation["operationId"]
  // An operation charged to no bucket (logout) sends no RateLimit-* headers.
  const charged = !(typeof id === "string" && isOperationName(id) && Operations[id].bucket === "none")
  const limited = charged && Array.isArray(operation["security"]) && operation["security"].length > 0
  for (const [status, response] of Object.entries(responses)) {
    if (!isRecord(response)) continue
    const content = response["content"]
    if (status === "400" && isRecord(content)) {
      content["application/json"] = { schema: envelopeRef("invalid_request_error") }
    }
    const headers: Json = { ...requestIdHeader }
    if (status.startsWith("2") && limited) Object.assign(headers, rateLimitHeaders)
    if (status === "201") headers["Location"] = header("The created resource")
    if (status === "429" || status === "503") {
      headers["Retry-After"] = header("Seconds to wait before retrying", { type: "integer" })
    }
    response["headers"] = { ...(isRecord(response["headers"]) ? response["headers"] : {}), ...headers }
  }
}

/** Keywords that say nothing about the type of the value. */
const ANNOTATIONS = new Set(["$ref", "description", "title", "examples", "default", "deprecated", "$comment"])

/**
 * A refined integer is documented as `{"$ref": "#/components/schemas/Int", "minimum": 0}`: valid JSON
 * Schema, but strict validators (ajv's strictTypes) refuse a type-specific keyword without a `type` beside
 * it, so the referenced schema's `type` is copied next to such keywords.
 */
const typesBesideReferences = (node: unknown, schemas: Json): void => {
  if (Array.isArray(node)) {
    for (const item of node) typesBesideReferences(item, schemas)
    return
  }
  if (!isRecord(node)) return
  const ref = node["$ref"]
  if (typeof ref === "string" && node["type"] === undefined && Object.keys(node).some((key) => !ANNOTATIONS.has(key))) {
    const target = schemas[ref.replace("#/components/schemas/", "")]
    if (isRecord(target) && target["type"] !== undefined) node["type"] = target["type"]
  }
  for (const value of Object.values(node)) typesBesideReferences(value, schemas)
}

/**
 * effect titles each refinement with its name (`maxLength(64)`, `int`, `between(1, 90)`), which the JSON
 * Schema generator copies: noise to a reader or a model, and the constraint is there as a keyword anyway.
 * Declarations cannot drop it short of re-annotating every refinement, so it goes here.
 */
const REFINEMENT_TITLE = new RegExp(
  "^(maxLength|minLength|length|pattern|startsWith|endsWith|includes|trimmed|lowercased|uppercased|capitalized|" +
    "uncapitalized|int|finite|nonNaN|positive|negative|nonNegative|nonPositive|greaterThan|greaterThanOrEqualTo|" +
    "lessThan|lessThanOrEqualTo|between|multipleOf|maxItems|minItems|itemsCount)(\\(.*\\))?$"
)

const dropRefinementTitles = (node: unknown): void => {
  if (Array.isArray(node)) {
    for (const item of node) dropRefinementTitles(item)
    return
  }
  if (!isRecord(node)) return
  const title = node["title"]
  if (typeof title === "string" && REFINEMENT_TITLE.test(title)) delete node["title"]
  for (const value of Object.values(node)) dropRefinementTitles(value)
}

/**
 * OpenAPI 3.1's SPDX `identifier` and `info.contact` have no annotation in the platform. The code carries no
 * open-source licence (the packages are private), so the document says so rather than invent one.
 */
const license = { name: "Proprietary: all rights reserved", identifier: "LicenseRef-Proprietary" }
const contact = { name: "acs maintainers" }

export const openApiDocument = (): Json => {
  // A copy: the platform caches the document it derives, and this one is completed in place.
  const spec = structuredClone(OpenApi.fromApi(Api)) as unknown as Json
  spec["info"] = { ...(isRecord(spec["info"]) ? spec["info"] : {}), license, contact }
  const paths = isRecord(spec["paths"]) ? spec["paths"] : {}
  const seen = new Set<string>()
  for (const item of Object.values(paths)) {
    if (!isRecord(item)) continue
    for (const operation of Object.values(item)) {
      if (!isRecord(operation)) continue
      describeOperation(operation, seen)
      polishOperation(operation)
    }
  }
  // The raw routes get the same headers as the declared ones (authenticated successes are rate-limited too).
  const raw = structuredClone(rawRoutes)
  for (const item of Object.values(raw)) {
    if (!isRecord(item)) continue
    for (const operation of Object.values(item)) if (isRecord(operation)) polishOperation(operation)
  }
  Object.assign(paths, raw)
  const components = isRecord(spec["components"]) ? spec["components"] : {}
  const schemas = isRecord(components["schemas"]) ? components["schemas"] : {}
  for (const name of Object.keys(schemas)) {
    if (name.startsWith("HttpApiDecodeError") || name === "Issue" || name.startsWith("PropertyKey")) delete schemas[name]
  }
  typesBesideReferences(spec, schemas)
  dropRefinementTitles(spec)
  return spec
}
