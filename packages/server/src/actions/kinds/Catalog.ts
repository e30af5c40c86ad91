/** Every kind the pipeline knows: the 21 proposal kinds and the two revert-only compensations. */
import type { KindName } from "@acs/domain/ProposalKinds"
import type { Kind } from "./Kind.ts"
import { AddKeywords } from "./kinds/AddKeywords.ts"
import { AddNegativeKeywords } from "./kinds/AddNegativeKeywords.ts"
import { AdGroupStatus } from "./kinds/AdGroupStatus.ts"
import { AdStatus } from "./kinds/AdStatus.ts"
import { BidStrategyChange } from "./kinds/BidStrategyChange.ts"
import { BudgetChange } from "./kinds/BudgetChange.ts"
import { CampaignStatus } from "./kinds/CampaignStatus.ts"
import { ChangeMatchType } from "./kinds/ChangeMatchType.ts"
import { CloneAdGroup } from "./kinds/CloneAdGroup.ts"
import { CloneCampaign } from "./kinds/CloneCampaign.ts"
import { CpaGoalChange } from "./kinds/CpaGoalChange.ts"
import { CreateAdGroup } from "./kinds/CreateAdGroup.ts"
import { CreateCampaign } from "./kinds/CreateCampaign.ts"
import { DefaultBidChange } from "./kinds/DefaultBidChange.ts"
import { DeleteAdGroup } from "./kinds/DeleteAdGroup.ts"
import { DeleteCampaign } from "./kinds/DeleteCampaign.ts"
import { KeywordBidChange } from "./kinds/KeywordBidChange.ts"
import { KeywordStatus } from "./kinds/KeywordStatus.ts"
import { RemoveKeywords } from "./kinds/RemoveKeywords.ts"
import { RemoveNegativeKeywords } from "./kinds/RemoveNegativeKeywords.ts"
import { Rename } from "./kinds/Rename.ts"
import { SearchMatchChange } from "./kinds/SearchMatchChange.ts"
import { TargetCpaChange } from "./kinds/TargetCpaChange.ts"

export const catalog: ReadonlyArray<Kind> = [
  BudgetChange,
  CampaignStatus,
  BidStrategyChange,
  TargetCpaChange,
  CreateCampaign,
  CloneCampaign,
  Rename,
  AdGroupStatus,
  CpaGoalChange,
  DefaultBidChange,
  SearchMatchChange,
  CreateAdGroup,
  CloneAdGroup,
  AddKeywords,
  KeywordBidChange,
  KeywordStatus,
  ChangeMatchType,
  RemoveKeywords,
  AddNegativeKeywords,
  RemoveNegativeKeywords,
  AdStatus,
  DeleteCampaign,
  DeleteAdGroup
]

const byName = new Map(catalog.map((kind) => [kind.kind, kind]))

export const kindNamed = (name: KindName): Kind => {
  const kind = byName.get(name)
  if (kind === undefined) throw new Error(`kind ${name} is missing from the catalog`)
  return kind
}
