/** How a change made outside acs reads in a policy reason or summary: who (and through what), and when. */
import type { ExternalUserType } from "@acs/domain/Actions"

const THROUGH: Record<typeof ExternalUserType.Type, string> = {
  CUSTOMER: "web UI",
  CUSTOMER_API: "another API client",
  APPLE_SUPPORT: "Apple support"
}

export const throughWhat = (userType: typeof ExternalUserType.Type): string => THROUGH[userType]

export const describeOutsideChange = (change: {
  readonly userType: typeof ExternalUserType.Type
  readonly modifiedBy: string
  readonly eventTime: string
}): string => `changed outside acs by ${change.modifiedBy} (${THROUGH[change.userType]}) at ${change.eventTime}`
