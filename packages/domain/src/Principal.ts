/** The caller, resolved once per request from a Bearer key or a session cookie. */
import { Context, Schema } from "effect"
import { Root } from "./FourEyes.ts"

export const ScopeSchema = Schema.Literal("read", "write", "admin")

export const RoleSchema = Schema.Literal("viewer", "editor", "approver", "admin")
export type Role = typeof RoleSchema.Type

/** Where a key reaches: every account of its org, a listed subset, or one account (docs/contract.md 5). */
export const Binding = Schema.Union(
  Schema.Struct({ kind: Schema.Literal("org") }),
  Schema.Struct({ kind: Schema.Literal("subset"), projectIds: Schema.Array(Schema.String) }),
  Schema.Struct({ kind: Schema.Literal("account"), projectId: Schema.String })
).annotations({ identifier: "Binding" })
export type Binding = typeof Binding.Type

export const Principal = Schema.Struct({
  kind: Schema.Literal("key", "person"),
  id: Schema.String,
  name: Schema.String,
  orgId: Schema.String,
  scope: ScopeSchema,
  canApprove: Schema.Boolean,
  binding: Binding,
  role: Schema.NullOr(RoleSchema),
  expiresAt: Schema.NullOr(Schema.String),
  root: Root
}).annotations({ identifier: "Principal" })
export type Principal = typeof Principal.Type

export class CurrentPrincipal extends Context.Tag("acs/CurrentPrincipal")<CurrentPrincipal, Principal>() {}

/** What each person role may do (docs/contract.md 5.4). */
export const roleAccess: Record<Role, { readonly scope: typeof ScopeSchema.Type; readonly canApprove: boolean }> = {
  viewer: { scope: "read", canApprove: false },
  editor: { scope: "write", canApprove: false },
  approver: { scope: "write", canApprove: true },
  admin: { scope: "admin", canApprove: true }
}
