//! The fallback readers: before a run, what its stacks read from producers cdkd has no
//! record of in this account. `Fn::GetStackOutput` with `RoleArn` reads the other account's
//! record; otherwise, unless `--no-cfn-fallback`, a producer's outputs come from
//! CloudFormation (`DescribeStacks`, once per stack and region) and `Fn::ImportValue`'s
//! exports from `ListExports` (once per region). Lookups during the run are synchronous, so
//! everything is read here, once.

use std::collections::BTreeSet;

use crate::analyzer::template::Template;
use crate::aws_env::AwsEnvironment;
use crate::cloudformation::CloudFormation;
use crate::deployment::external::StateSnapshot;
use crate::state::keys::StateKeys;

/// One stack of the run that may read other stacks' values.
#[derive(Debug, Clone, Copy)]
pub struct Consumer<'t> {
    /// Its name (a producer in the run is never read from CloudFormation).
    pub stack: &'t str,
    /// Its template.
    pub template: &'t Template,
    /// Its region.
    pub region: &'t str,
}

/// Reads into `snapshot` what `consumers` read outside this account's cdkd state: other
/// accounts' records (always), and CloudFormation's outputs and exports when `cloudformation`.
pub async fn read_fallbacks(
    snapshot: &mut StateSnapshot,
    aws: &AwsEnvironment,
    keys: &StateKeys,
    consumers: &[Consumer<'_>],
    cloudformation: bool,
) -> anyhow::Result<()> {
    // Cross-account `Fn::GetStackOutput` (RoleArn) reads cdkd state in the other account,
    // fallback or not.
    snapshot
        .read_cross_account(aws, keys, consumers.iter().map(|c| (c.template, c.region)))
        .await;
    if !cloudformation {
        return Ok(());
    }
    let in_run: BTreeSet<String> = consumers.iter().map(|c| c.stack.to_string()).collect();
    let cloudformation_in = |region: &str| CloudFormation::new(aws, region);
    read_cloudformation(snapshot, cloudformation_in, consumers, &in_run).await
}

/// Reads from CloudFormation (`cloudformation_in`: CloudFormation in a region) the outputs of
/// every `Fn::GetStackOutput` producer of `consumers` that has no record, is not in the run
/// (`in_run`) and was not read already, and the exports of the regions whose
/// `Fn::ImportValue` names no record exports ([`StateSnapshot::read_cloudformation_over`]).
pub async fn read_cloudformation(
    snapshot: &mut StateSnapshot,
    cloudformation_in: impl Fn(&str) -> CloudFormation,
    consumers: &[Consumer<'_>],
    in_run: &BTreeSet<String>,
) -> anyhow::Result<()> {
    snapshot
        .read_cloudformation_over(
            cloudformation_in,
            consumers.iter().map(|c| (c.template, c.region)),
            in_run,
        )
        .await
}
