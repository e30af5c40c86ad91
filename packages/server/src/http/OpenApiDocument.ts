/**
 * The OpenAPI 3.1 document, derived from the HttpApi declaration, then completed with what the
 * declaration cannot say: the response headers, the envelope for decode failures (which the platform
 * would document in its own shape), and the non-REST route /docs.
 */
import { Api } from "@acs/domain/Api"
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
      description: "A browsable reference over this document.",
      responses: { "200": { description: "HTML page", content: { "text/html": { schema: { type: "string" } } } } }
    }
  }
}

const polishOperation = (operation: Json) => {
  const responses = isRecord(operation["responses"]) ? operation["responses"] : {}
  const authenticated = Array.isArray(operation["security"]) && operation["security"].length > 0
  for (const [status, response] of Object.entries(responses)) {
    if (!isRecord(response)) continue
    const content = response["content"]
    if (status === "400" && isRecord(content)) {
      content["application/json"] = { schema: envelopeRef("invalid_request_error") }
    }
    const headers: Json = { ...requestIdHeader }
    if (status.startsWith("2") && authenticated) Object.assign(headers, rateLimitHeaders)
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

export const openApiDocument = (): Json => {
  const spec = OpenApi.fromApi(Api) as unknown as Json
  const paths = isRecord(spec["paths"]) ? spec["paths"] : {}
  for (const item of Object.values(paths)) {
    if (!isRecord(item)) continue
    for (const operation of Object.values(item)) if (isRecord(operation)) polishOperation(operation)
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
  return spec
}
