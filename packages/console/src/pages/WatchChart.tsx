/**
 * A change's before and after as bars (docs/decisions/console.md): spend, installs and cost per install per day
 * in the baseline (the complete days before the applied day) and in each review's window after it, the applied
 * day marked between them. Drawn from the watch's own windows, in plain SVG: the API serves no entity's daily
 * series from the warehouse, and these are the numbers the verdict was made from.
 */
import type { Watch, WatchWindow } from "@acs/domain/Guard"
import { count, money } from "../format.ts"

/** One bar group: a window, its label and its values per day. */
interface Column {
  readonly label: string
  readonly window: WatchWindow
  readonly after: boolean
}

interface Panel {
  readonly title: string
  readonly value: (w: WatchWindow) => number | null
  readonly show: (value: number) => string
}

const perDay = (total: number, w: WatchWindow): number | null => (w.days > 0 ? total / w.days : null)

const panelsOf = (currency: string): ReadonlyArray<Panel> => [
  { title: "Spend per day", value: (w) => perDay(w.spendMicros, w), show: (v) => money(Math.round(v), currency) },
  { title: "Installs per day", value: (w) => perDay(w.installs, w), show: (v) => count(Math.round(v * 10) / 10) },
  { title: "Cost per install", value: (w) => (w.installs > 0 ? w.spendMicros / w.installs : null), show: (v) => money(Math.round(v), currency) }
]

const WIDTH = 240
const HEIGHT = 140
const TOP = 28
const BOTTOM = 30
const BAR = 34
const PLOT = HEIGHT - TOP - BOTTOM

const PanelChart = (props: { readonly panel: Panel; readonly columns: ReadonlyArray<Column>; readonly appliedDay: string | null }) => {
  const { panel } = props
  const bars = props.columns.map((column) => ({ column, value: panel.value(column.window) }))
  const top = Math.max(0, ...bars.map((b) => b.value ?? 0))
  // Slots: the baseline, an empty one holding the applied day's line, then one per review.
  const slot = (WIDTH - 20) / Math.max(bars.length + 1, 3)
  const xOf = (index: number) => 10 + slot * (index === 0 ? 0 : index + 1) + (slot - BAR) / 2
  const lineX = 10 + slot * 1.5
  const heightOf = (value: number) => (top === 0 ? 0 : Math.max((value / top) * PLOT, value > 0 ? 1 : 0))
  const description = bars.map((b) => `${b.column.label}: ${b.value === null ? "none" : panel.show(b.value)}`).join(", ")
  return (
    <figure class="watch-panel">
      <figcaption>{panel.title}</figcaption>
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} width={WIDTH} height={HEIGHT} role="img" aria-label={`${panel.title}: ${description}`}>
        <line x1={4} x2={WIDTH - 4} y1={HEIGHT - BOTTOM} y2={HEIGHT - BOTTOM} class="axis" />
        <line x1={lineX} x2={lineX} y1={14} y2={HEIGHT - BOTTOM + 4} class="applied" />
        <text x={lineX} y={10} text-anchor="middle">
          {props.appliedDay === null ? "applied" : `applied ${props.appliedDay.slice(5)}`}
        </text>
        {bars.length === 1 && (
          <text x={xOf(1) + BAR / 2} y={HEIGHT - BOTTOM - 6} text-anchor="middle">no review yet</text>
        )}
        {bars.map(({ column, value }, i) => {
          const x = xOf(i)
          const h = value === null ? 0 : heightOf(value)
          return (
            <g key={column.label} class={column.after ? "after" : "before"}>
              {value !== null && <rect x={x} y={HEIGHT - BOTTOM - h} width={BAR} height={h} rx={2} />}
              <text x={x + BAR / 2} y={HEIGHT - BOTTOM - h - 3} text-anchor="middle">{value === null ? "—" : panel.show(value)}</text>
              <text x={x + BAR / 2} y={HEIGHT - BOTTOM + 14} text-anchor="middle">{column.label}</text>
            </g>
          )
        })}
      </svg>
    </figure>
  )
}

/** The watch's windows side by side; nothing before the watch has a baseline. */
export const WatchChart = (props: { readonly watch: Watch; readonly currency: string }) => {
  const { watch } = props
  if (watch.baseline === null) return null
  const columns: ReadonlyArray<Column> = [
    { label: `before (${watch.baseline.days} d)`, window: watch.baseline, after: false },
    ...watch.reviews.map((r) => ({ label: `after ${r.afterDays} d`, window: r.window, after: true }))
  ]
  return (
    <div class="watch-chart" role="group" aria-label="Before and after, per day">
      {panelsOf(props.currency).map((panel) => <PanelChart key={panel.title} panel={panel} columns={columns} appliedDay={watch.appliedDay} />)}
    </div>
  )
}
