/**
 * How acs names an upstream credential (a connection's API client) without keeping its client id in clear: the
 * sync queue and the rate limits recorded per credential (warehouse/CredentialLimits.ts) use this name.
 */
import { createHash } from "node:crypto"

/** The credential an API client id stands for. */
export const credentialKeyOf = (clientId: string): string => `cred_${createHash("sha256").update(clientId).digest("hex").slice(0, 16)}`

/** The prefix of an org's own credential name: a connection made before credentials were named stands alone. */
export const ORG_CREDENTIAL_PREFIX = "org_"
