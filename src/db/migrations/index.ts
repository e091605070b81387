import { Migration20261121234132_Core } from './Migration20261121234132_Core.js';
import { Migration20261122001451_Webhooks } from './Migration20261122001451_Webhooks.js';
import { Migration20261122001801_GitRefs } from './Migration20261122001801_GitRefs.js';
import { Migration20261123135000_JournalNote } from './Migration20261123135000_JournalNote.js';
import { Migration20261123135704_PullRequests } from './Migration20261123135704_PullRequests.js';
import { Migration20261123180000_RateLimits } from './Migration20261123180000_RateLimits.js';
import { Migration20261123200000_RepositoryCounters } from './Migration20261123200000_RepositoryCounters.js';
import { Migration20261123210000_DeliveryClaimOrder } from './Migration20261123210000_DeliveryClaimOrder.js';
import { Migration20261125120000_JournalDescribeAttempts } from './Migration20261125120000_JournalDescribeAttempts.js';
import { Migration20261125200000_RefusalsWithoutAddresses } from './Migration20261125200000_RefusalsWithoutAddresses.js';
import { Migration20261125200100_UserCommitEmail } from './Migration20261125200100_UserCommitEmail.js';
import { Migration20261126100000_SiteValues } from './Migration20261126100000_SiteValues.js';
import { Migration20261126120000_JournalPushDetails } from './Migration20261126120000_JournalPushDetails.js';
import { Migration20261126130000_RepositoryLockLeases } from './Migration20261126130000_RepositoryLockLeases.js';
import { Migration20261126140000_RefsFingerprint } from './Migration20261126140000_RefsFingerprint.js';
import { Migration20261126150000_OpenPullsCounter } from './Migration20261126150000_OpenPullsCounter.js';
import { Migration20261126160000_BranchProtections } from './Migration20261126160000_BranchProtections.js';
import { Migration20261127100000_CommitStatuses } from './Migration20261127100000_CommitStatuses.js';
import { Migration20261127105000_PullRefs } from './Migration20261127105000_PullRefs.js';
import { Migration20261127110000_AutoMerge } from './Migration20261127110000_AutoMerge.js';
import { Migration20261128100000_IssueComments } from './Migration20261128100000_IssueComments.js';
import { Migration20261128110000_ReviewComments } from './Migration20261128110000_ReviewComments.js';
import { Migration20261128120000_LabelsAssignees } from './Migration20261128120000_LabelsAssignees.js';
import { Migration20261128130000_Timeline } from './Migration20261128130000_Timeline.js';
import { Migration20261128140000_IssueListOrder } from './Migration20261128140000_IssueListOrder.js';
import { Migration20261129100000_RepositoryRowVersion } from './Migration20261129100000_RepositoryRowVersion.js';

/** Migrations in the order they apply; `npm run migration:create -- <Name>` writes new ones to add here. */
export const MIGRATIONS = [
  Migration20261121234132_Core,
  Migration20261122001451_Webhooks,
  Migration20261122001801_GitRefs,
  Migration20261123135000_JournalNote,
  Migration20261123135704_PullRequests,
  Migration20261123180000_RateLimits,
  Migration20261123200000_RepositoryCounters,
  Migration20261123210000_DeliveryClaimOrder,
  Migration20261125120000_JournalDescribeAttempts,
  Migration20261125200000_RefusalsWithoutAddresses,
  Migration20261125200100_UserCommitEmail,
  Migration20261126100000_SiteValues,
  Migration20261126120000_JournalPushDetails,
  Migration20261126130000_RepositoryLockLeases,
  Migration20261126140000_RefsFingerprint,
  Migration20261126150000_OpenPullsCounter,
  Migration20261126160000_BranchProtections,
  Migration20261127100000_CommitStatuses,
  Migration20261127105000_PullRefs,
  Migration20261127110000_AutoMerge,
  Migration20261128100000_IssueComments,
  Migration20261128110000_ReviewComments,
  Migration20261128120000_LabelsAssignees,
  Migration20261128130000_Timeline,
  Migration20261128140000_IssueListOrder,
  Migration20261129100000_RepositoryRowVersion,
];
