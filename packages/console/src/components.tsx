/** Pieces every page uses: a modal dialog, a status line, an account picker, the diff table. */
import type { Account } from "@acs/domain/Accounts"
import type { ComponentChildren } from "preact"
import { useEffect, useRef } from "preact/hooks"
import type { DiffRow } from "@acs/domain/ActionDiff"
import { fieldLabel, fieldValue } from "./format.ts"

/** A native modal <dialog>: the browser keeps focus inside it and closes it on Escape. */
export const Dialog = (props: { readonly title: string; readonly onClose: () => void; readonly children: ComponentChildren }) => {
  const ref = useRef<HTMLDialogElement>(null)
  useEffect(() => {
    const dialog = ref.current
    if (dialog !== null && !dialog.open) dialog.showModal()
    return () => dialog?.close()
  }, [])
  return (
    <dialog ref={ref} aria-labelledby="dialog-title" onClose={props.onClose} onCancel={props.onClose}>
      <h2 id="dialog-title">{props.title}</h2>
      {props.children}
    </dialog>
  )
}

/** An outcome people must notice: errors are alerts, the rest polite status messages. */
export const Notice = (props: { readonly error?: string | undefined; readonly message?: string | undefined }) => (
  <>
    {props.error !== undefined && <p class="notice error" role="alert">{props.error}</p>}
    {props.message !== undefined && <p class="notice ok" role="status">{props.message}</p>}
  </>
)

export const AccountPicker = (props: {
  readonly accounts: ReadonlyArray<Account>
  readonly value: string | undefined
  readonly route: string
}) => (
  <label class="field">
    <span>Account</span>
    <select
      value={props.value ?? ""}
      onChange={(event) => (window.location.hash = `#/${props.route}/${encodeURIComponent(event.currentTarget.value)}`)}
    >
      {props.accounts.map((a) => <option key={a.projectId} value={a.projectId}>{a.name} ({a.currency})</option>)}
    </select>
  </label>
)

/**
 * A table that scrolls sideways on a narrow screen: focusable and named, so a keyboard can scroll it and a
 * screen reader says what it is (axe-core's scrollable-region-focusable, found at phone width).
 */
export const TableWrap = (props: { readonly label: string; readonly children: ComponentChildren }) => (
  <div class="table-wrap" tabIndex={0} role="region" aria-label={props.label}>{props.children}</div>
)

/** Prior → proposed, field by field, in the account's currency. */
export const DiffTable = (props: {
  readonly rows: ReadonlyArray<DiffRow>
  readonly currency: string
  readonly caption: string
  readonly priorLabel?: string
  readonly proposedLabel?: string
}) =>
  props.rows.length === 0 ? <p class="muted">No field-level change recorded.</p> : (
    <TableWrap label={props.caption}>
      <table class="diff">
        <caption class="visually-hidden">{props.caption}</caption>
        <thead>
          <tr>
            <th scope="col">Field</th>
            <th scope="col">{props.priorLabel ?? "Prior"}</th>
            <th scope="col">{props.proposedLabel ?? "Proposed"}</th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((row, i) => (
            <tr key={i}>
              <th scope="row">{row.entity === null ? fieldLabel(row.field) : `${row.entity}: ${fieldLabel(row.field)}`}</th>
              <td class="prior">{row.change === "add" ? "—" : fieldValue(row.field, row.prior, props.currency)}</td>
              <td class="proposed">{row.change === "remove" ? "removed" : fieldValue(row.field, row.proposed, props.currency)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  )

export const StatusBadge = (props: { readonly status: string }) => <span class={`badge status-${props.status}`}>{props.status}</span>
