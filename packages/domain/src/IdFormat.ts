/**
 * The form of acs's identifiers (`prj_…`, `act_…`, `key_…`): a prefix that says what they name, `_`, and 16
 * characters of a lower-case alphabet without i, l, o and u. The server makes them (server/src/db/Ids.ts); the
 * console checks an id taken from its address against this form before it goes anywhere near an API path.
 */
export const ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"

export const ID_LENGTH = 16

const BODY = `[${ID_ALPHABET}]{${ID_LENGTH}}`

/** True when `value` is an id with `prefix` as the server makes them. */
export const isId = (prefix: string, value: string): boolean => new RegExp(`^${prefix}_${BODY}$`).test(value)
