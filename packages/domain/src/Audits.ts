/** Audits (`POST /accounts/{projectId}/audits`): findings about an account's set-up, stored when run. */
import { Schema } from "effect"

export const Severity = Schema.Literal("high", "medium", "low")
export type Severity = typeof Severity.Type

export const FindingEntity = Schema.Struct({
  type: Schema.Literal("campaign", "adGroup", "keyword"),
  id: Schema.String,
  name: Schema.String
}).annotations({ identifier: "FindingEntity" })

export const Finding = Schema.Struct({
  severity: Severity,
  title: Schema.String,
  detail: Schema.String,
  entity: Schema.NullOr(FindingEntity).annotations({ description: "null for a finding about the whole account" })
}).annotations({ identifier: "AuditFinding" })
export type Finding = typeof Finding.Type

export const Audit = Schema.Struct({
  auditId: Schema.String,
  createdAt: Schema.String,
  findings: Schema.Array(Finding)
}).annotations({ identifier: "Audit" })
export type Audit = typeof Audit.Type
