/** Placeholder: filled in by the change that needs it (no schema change yet). */
import { Effect } from "effect"

export default Effect.void
