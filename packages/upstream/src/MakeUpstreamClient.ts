/**
 * Chooses the adapter for a connection's API version: `v5` (Campaign Management API, retired
 * 2027-01-26) or `v1` (Apple Ads Platform API). The server still connects with v5 by default; moving
 * the default to v1 is a later slice of issue 10.
 */
import type { AppleCredentials } from "./ClientSecret.ts"
import { makeAppleSearchAdsClient } from "./AppleSearchAdsClient.ts"
import { appleEndpoints, appleV1Endpoints, defaultRetryPolicy, type Endpoints, type RetryPolicy } from "./UpstreamHttp.ts"
import { makeAppleAdsPlatformClient } from "./v1/AppleAdsPlatformClient.ts"

export type UpstreamApiVersion = "v1" | "v5"

export const DEFAULT_API_VERSION: UpstreamApiVersion = "v5"

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
