/**
 * The server's global setup (the run's one throwaway PostgreSQL cluster and its migrated template), reused as is.
 * Vitest loads a global setup file under a `/@fs/` id, so a file outside this package's root cannot
 * resolve its bare imports (`@effect/sql-pg`, `pg`) from its own directory; imported from here, it can.
 */
export { default } from "../../../server/test/support/globalSetup.ts"
