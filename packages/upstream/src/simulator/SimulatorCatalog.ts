/**
 * The vocabulary the generator draws from: app themes (keyword cores, Search Match words,
 * competitor apps), keyword affixes, negative keywords, currencies and the geo search list.
 */

export interface AppTheme {
  readonly appName: string
  readonly cores: ReadonlyArray<string>
  readonly competitors: ReadonlyArray<string>
}

export const THEMES: ReadonlyArray<AppTheme> = [
  {
    appName: "Lumen Photo Editor",
    cores: ["photo editor", "picture editor", "photo filter", "collage maker", "selfie editor", "image editor", "photo effects", "retouch", "background eraser", "photo enhancer"],
    competitors: ["SnapTune", "Pixel Forge"]
  },
  {
    appName: "Pocket Budget",
    cores: ["budget app", "expense tracker", "money manager", "spending tracker", "bill organizer", "savings planner", "finance tracker", "budget planner", "receipt scanner", "debt payoff"],
    competitors: ["CoinKeeper Plus", "Ledgerly"]
  },
  {
    appName: "Calm Tides",
    cores: ["meditation", "sleep sounds", "breathing exercise", "mindfulness", "relaxing music", "anxiety relief", "sleep timer", "white noise", "guided meditation", "stress relief"],
    competitors: ["Quiet Mind", "Drift Sleep"]
  },
  {
    appName: "Stride Run",
    cores: ["running app", "step counter", "run tracker", "marathon training", "couch to 5k", "pace calculator", "jogging", "gps running", "workout log", "interval timer"],
    competitors: ["RunPal", "Tempo Track"]
  },
  {
    appName: "Polyglot Pal",
    cores: ["learn spanish", "language learning", "learn french", "vocabulary", "learn japanese", "flashcards", "learn german", "grammar", "pronunciation", "translator"],
    competitors: ["LingoLeap", "Wordwise"]
  },
  {
    appName: "Pantry Chef",
    cores: ["recipes", "meal planner", "cooking app", "grocery list", "healthy recipes", "dinner ideas", "keto recipes", "vegan recipes", "baking", "meal prep"],
    competitors: ["ForkFeed", "Kitchen Pilot"]
  },
  {
    appName: "Tile Drift",
    cores: ["puzzle game", "tile match", "brain games", "block puzzle", "match 3", "word puzzle", "logic game", "relaxing game", "offline games", "sudoku"],
    competitors: ["Mosaic Mania", "Block Bloom"]
  },
  {
    appName: "Taskline",
    cores: ["to do list", "planner", "habit tracker", "task manager", "reminders", "calendar app", "productivity", "daily planner", "notes app", "focus timer"],
    competitors: ["Doable", "Checkmark Pro"]
  }
]

export const KEYWORD_PREFIXES: ReadonlyArray<string> = ["", "best", "free", "top", "easy", "pro", "simple", "quick", "smart", "new", "daily", "fast"]
export const KEYWORD_SUFFIXES: ReadonlyArray<string> = ["", "app", "for iphone", "free", "pro", "online", "offline", "tool", "ios", "plus", "for kids", "premium"]

export const NEGATIVE_WORDS: ReadonlyArray<string> = ["hack", "crack", "cheat", "apk", "mod", "torrent", "wallpaper", "jobs", "login", "refund", "customer service", "android"]

export const PARENT_ORG_NAMES: ReadonlyArray<string> = ["Lumen Labs", "Northwind Apps", "Blue Harbor Games", "Cedar & Pine Software"]

export const AD_GROUP_THEMES: ReadonlyArray<string> = ["Core", "Features", "Long tail", "Free", "Pro", "Seasonal", "Audience", "Brand terms", "Category", "Alternatives"]
export const CAMPAIGN_PURPOSES: ReadonlyArray<string> = ["Brand", "Category", "Competitor", "Discovery", "Generic", "Long tail"]

export interface CurrencyProfile {
  /** Micros in the smallest unit the platform shows. */
  readonly minorUnitMicros: number
  /** Major units per US dollar, so generated prices feel native. */
  readonly perDollar: number
}

const CURRENCIES: Record<string, CurrencyProfile> = {
  USD: { minorUnitMicros: 10_000, perDollar: 1 },
  EUR: { minorUnitMicros: 10_000, perDollar: 0.92 },
  GBP: { minorUnitMicros: 10_000, perDollar: 0.79 },
  CHF: { minorUnitMicros: 10_000, perDollar: 0.88 },
  AUD: { minorUnitMicros: 10_000, perDollar: 1.52 },
  CAD: { minorUnitMicros: 10_000, perDollar: 1.37 },
  JPY: { minorUnitMicros: 1_000_000, perDollar: 150 },
  KRW: { minorUnitMicros: 1_000_000, perDollar: 1350 }
}

export const currencyProfile = (currency: string): CurrencyProfile =>
  CURRENCIES[currency] ?? { minorUnitMicros: 10_000, perDollar: 1 }

/** A price given in US cents, in the currency's smallest units (at least 1). */
export const minorUnitsFromUsCents = (profile: CurrencyProfile, usCents: number): number =>
  Math.max(1, Math.round((usCents / 100) * profile.perDollar * (1_000_000 / profile.minorUnitMicros)))

export interface GeoEntry {
  readonly id: string
  readonly entity: "Country" | "AdminArea" | "Locality"
  readonly displayName: string
  readonly countryCode: string
}

export const GEO: ReadonlyArray<GeoEntry> = [
  { id: "US", entity: "Country", displayName: "United States", countryCode: "US" },
  { id: "GB", entity: "Country", displayName: "United Kingdom", countryCode: "GB" },
  { id: "DE", entity: "Country", displayName: "Germany", countryCode: "DE" },
  { id: "AT", entity: "Country", displayName: "Austria", countryCode: "AT" },
  { id: "CH", entity: "Country", displayName: "Switzerland", countryCode: "CH" },
  { id: "FR", entity: "Country", displayName: "France", countryCode: "FR" },
  { id: "JP", entity: "Country", displayName: "Japan", countryCode: "JP" },
  { id: "CA", entity: "Country", displayName: "Canada", countryCode: "CA" },
  { id: "AU", entity: "Country", displayName: "Australia", countryCode: "AU" },
  { id: "US|CA", entity: "AdminArea", displayName: "California, United States", countryCode: "US" },
  { id: "US|NY", entity: "AdminArea", displayName: "New York, United States", countryCode: "US" },
  { id: "US|TX", entity: "AdminArea", displayName: "Texas, United States", countryCode: "US" },
  { id: "DE|BY", entity: "AdminArea", displayName: "Bavaria, Germany", countryCode: "DE" },
  { id: "JP|13", entity: "AdminArea", displayName: "Tokyo, Japan", countryCode: "JP" },
  { id: "US|CA|Cupertino", entity: "Locality", displayName: "Cupertino, California, United States", countryCode: "US" },
  { id: "US|CA|San Francisco", entity: "Locality", displayName: "San Francisco, California, United States", countryCode: "US" },
  { id: "US|NY|New York", entity: "Locality", displayName: "New York, New York, United States", countryCode: "US" },
  { id: "DE|BY|Munich", entity: "Locality", displayName: "Munich, Bavaria, Germany", countryCode: "DE" },
  { id: "GB|ENG|London", entity: "Locality", displayName: "London, England, United Kingdom", countryCode: "GB" }
]
