/**
 * Options of the spans on the request path: kept (a tracer sees them), without the call-site stack trace
 * Effect captures by default (an Error built per span, on every request).
 */
export const HOT_SPAN = { captureStackTrace: false } as const
