/** Free-form JSON in the API's schemas. */
import { Schema } from "effect"

/**
 * A JSON object of any shape, documented as `{"type": "object"}`. A `Schema.Unknown` would be documented
 * as `{"$id": "/schemas/unknown"}` wherever it appears, and an `$id` repeated in one document makes strict
 * JSON Schema validators (ajv's 2020 draft) refuse the whole OpenAPI document. The annotation replaces the
 * generated schema, so the description goes inside it.
 */
export const jsonObject = (description: string) =>
  Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({ jsonSchema: { type: "object", description } })
