/**
 * Bare `pg` for the benchmark. The root package has only `@types/pg`; the runtime module is the server
 * package's own dependency, loaded from there so the bench uses the same driver version as acs.
 */
import { createRequire } from "node:module"
import type { Pool as PoolClass, PoolConfig } from "pg"

const requireFromServer = createRequire(new URL("../../packages/server/package.json", import.meta.url))
const pg = requireFromServer("pg") as { readonly Pool: typeof PoolClass }

export type Pool = PoolClass

export const makePool = (config: PoolConfig): Pool => new pg.Pool(config)
