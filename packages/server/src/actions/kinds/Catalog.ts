/** Every kind the pipeline knows: every proposal kind and the revert-only compensations. */
import type { KindName } from "@acs/domain/ProposalKinds"
import type { Kind } from "./Kind.ts"
import { AddKeywords } from "./AddKeywords.ts"
import { AddNegativeKeywords } from "./AddNegativeKeywords.ts"
import { AdGroupStatus } from "./AdGroupStatus.ts"
import { AdStatus } from "./AdStatus.ts"
import { BidStrategyChange } from "./BidStrategyChange.ts"
import { BudgetChange } from "./BudgetChange.ts"
import { CampaignStatus } from "./CampaignStatus.ts"
import { ChangeMatchType } from "./ChangeMatchType.ts"
import { CloneAdGroup } from "./CloneAdGroup.ts"
import { CloneCampaign } from "./CloneCampaign.ts"
import { CpaGoalChange } from "./CpaGoalChange.ts"
import { CreateAdGroup } from "./CreateAdGroup.ts"
import { CreateCampaign } from "./CreateCampaign.ts"
import { DefaultBidChange } from "./DefaultBidChange.ts"
import { DeleteAdGroup } from "./DeleteAdGroup.ts"
import { DeleteCampaign } from "./DeleteCampaign.ts"
import { KeywordBidChange } from "./KeywordBidChange.ts"
import { KeywordStatus } from "./KeywordStatus.ts"
import { RemoveKeywords } from "./RemoveKeywords.ts"
import { RemoveNegativeKeywords } from "./RemoveNegativeKeywords.ts"
import { HarvestSearchTerms } from "./HarvestSearchTerms.ts"
import { Rename } from "./Rename.ts"
import { SearchMatchChange } from "./SearchMatchChange.ts"
import { TargetCpaChange } from "./TargetCpaChange.ts"
import { UnharvestSearchTerms } from "./UnharvestSearchTerms.ts"

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
  HarvestSearchTerms,
  AdStatus,
  DeleteCampaign,
  DeleteAdGroup,
  UnharvestSearchTerms
]

const byName = new Map(catalog.map((kind) => [kind.kind, kind]))

export const kindNamed = (name: KindName): Kind => {
  const kind = byName.get(name)
  if (kind === undefined) throw new Error(`kind ${name} is missing from the catalog`)
  return kind
}
