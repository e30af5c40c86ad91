/**
 * Chooses the adapter for a connection's API version: `v1` (Apple Ads Platform API, the default) or `v5`
 * (Campaign Management API, retired 2027-01-26).
 */
import type { AppleCredentials } from "./ClientSecret.ts"
import type { UpstreamApiVersion } from "./Upstream.ts"
import { makeAppleSearchAdsClient } from "./AppleSearchAdsClient.ts"
import { appleEndpoints, appleV1Endpoints, defaultRetryPolicy, type Endpoints, type RetryPolicy } from "./UpstreamHttp.ts"
import { makeAppleAdsPlatformClient } from "./v1/AppleAdsPlatformClient.ts"

export type { UpstreamApiVersion } from "./Upstream.ts"

export const DEFAULT_API_VERSION: UpstreamApiVersion = "v1"

/** Apple's own endpoints for a version. */
export const endpointsFor = (apiVersion: UpstreamApiVersion): Endpoints => apiVersion === "v1" ? appleV1Endpoints : appleEndpoints

export const makeUpstreamClient = (
  apiVersion: UpstreamApiVersion,
  endpoints: Endpoints,
  credentials: AppleCredentials,
  policy: RetryPolicy = defaultRetryPolicy
) =>
  apiVersion === "v1"
    ? makeAppleAdsPlatformClient(endpoints, credentials, policy)
    : makeAppleSearchAdsClient(endpoints, credentials, policy)
