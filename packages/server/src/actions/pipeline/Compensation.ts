/**
 * The compensating change of an applied action: its kind's inverse of what it applied (the payload it was
 * proposed with and the ids its apply produced). A revert proposes it (Revert.ts); a changeset that rolls back
 * applies it at once for each member it applied (worker/ChangesetRun.ts).
 */
import type { ActionRecord } from "@acs/domain/Actions"
import { Schema } from "effect"
import { kindNamed } from "../kinds/Catalog.ts"
import type { Ids, Inverse } from "../kinds/Kind.ts"

/** Undefined when the kind has none (or the action is an outside change, which acs never undoes). */
export const compensationOf = (original: ActionRecord): Inverse | undefined =>
  original.kind === "external_change" ? undefined : kindNamed(original.kind).use((definition) => {
    const payload = Schema.decodeUnknownSync(definition.payload)(original.payload)
    return definition.inverse?.(payload, (original.result ?? {}) as Ids)
  })
