/** A request URL's path: the text before its query, if any (no array made per request, as `split` would). */
export const pathOf = (url: string): string => {
  const query = url.indexOf("?")
  return query < 0 ? url : url.slice(0, query)
}
