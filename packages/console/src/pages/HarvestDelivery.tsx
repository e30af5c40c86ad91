/**
 * What a harvest takes from the ad groups its terms came from: the share of each source ad group's spend, taps and
 * installs over the 30 days before the proposal that the negatives remove, as the harvest's payload records it (its
 * preview, the approval queue, the ledger). Nothing for any other kind.
 */
import { Option } from "effect"
import { TableWrap } from "../components.tsx"
import { money } from "../format.ts"
import { deliveryOf } from "../harvest.ts"

/** `12.5 % ($40.00 of $320.00)`: a share removed, with what it is of. */
const share = (pct: number, removed: string, total: string) => `${pct} % (${removed} of ${total})`

export const HarvestDelivery = (props: { readonly payload: unknown; readonly currency: string }) =>
  Option.match(deliveryOf(props.payload), {
    onNone: () => null,
    onSome: (d) =>
      d.adGroups.length === 0 ? <p class="muted">The terms are not negated at their sources: no delivery is taken from them.</p> : (
        <TableWrap label="Delivery the negatives remove, per source ad group">
          <table class="delivery">
            <caption>Delivery the negatives remove from each source ad group, {d.start} to {d.end}</caption>
            <thead><tr><th scope="col">Source ad group</th><th scope="col">Spend</th><th scope="col">Taps</th><th scope="col">Installs</th></tr></thead>
            <tbody>
              {d.adGroups.map((g) => (
                <tr key={g.adGroupId} data-ad-group-id={g.adGroupId}>
                  <th scope="row">{g.adGroupName}</th>
                  <td>{share(g.removedPct.spend, money(g.removed.spendMicros, props.currency), money(g.total.spendMicros, props.currency))}</td>
                  <td>{share(g.removedPct.taps, String(g.removed.taps), String(g.total.taps))}</td>
                  <td>{share(g.removedPct.installs, String(g.removed.installs), String(g.total.installs))}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )
  })
