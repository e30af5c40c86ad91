/**
 * Function bodies whose statements Citus runs on the distributed schema (docs/scale.md): each join of two
 * account-scoped tables names the account on both sides, so the join stays on one shard.
 */
import { installFunctions } from "../functions/FunctionFiles.ts"

export default installFunctions(["acs_recent_change"])
