//! The fallback readers: before a run, what its stacks read from producers cdkd has no
//! record of in this account. `Fn::GetStackOutput` with `RoleArn` reads the other account's
//! record; otherwise, unless `--no-cfn-fallback`, a producer's outputs come from
//! CloudFormation (`DescribeStacks`, once per stack and region) and `Fn::ImportValue`'s
//! exports from `ListExports` (once per region). Lookups during the run are synchronous, so
//! everything is read here, once.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use crate::analyzer::template::Template;
use crate::aws_env::AwsEnvironment;
use crate::cloudformation::sdk::SdkCloudFormation;
use crate::cloudformation::{CallError, CloudFormationApi};
use crate::deployment::external::{CloudFormationStack, StateSnapshot};
use crate::state::keys::StateKeys;

/// Where the fallback reaches CloudFormation: a client per region.
pub trait CloudFormationRegions: Sync {
    /// CloudFormation in `region`.
    fn in_region(&self, region: &str) -> Arc<dyn CloudFormationApi>;
}

/// CloudFormation through the AWS SDK.
pub struct SdkRegions<'a>(pub &'a AwsEnvironment);

impl CloudFormationRegions for SdkRegions<'_> {
    fn in_region(&self, region: &str) -> Arc<dyn CloudFormationApi> {
        Arc::new(SdkCloudFormation::new(self.0, region))
    }
}

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
    read_cloudformation(snapshot, &SdkRegions(aws), consumers, &in_run).await
}

/// Reads from CloudFormation the outputs of every `Fn::GetStackOutput` producer of
/// `consumers` that has no record, is not in the run (`in_run`) and was not read already
/// (all at once), and the exports of the regions whose `Fn::ImportValue` names no record
/// exports. A stack CloudFormation does not know is kept as absent; any other error fails,
/// naming the stack or region and the error.
pub async fn read_cloudformation(
    snapshot: &mut StateSnapshot,
    regions: &dyn CloudFormationRegions,
    consumers: &[Consumer<'_>],
    in_run: &BTreeSet<String>,
) -> anyhow::Result<()> {
    let pairs = || consumers.iter().map(|c| (c.template, c.region));
    let export_regions = snapshot.export_candidates(pairs());
    let wanted = snapshot.cloudformation_candidates(pairs(), in_run);
    let mut failures = Vec::new();
    let listed = export_regions.iter().map(|region| async move {
        (
            region,
            list_exports(&*regions.in_region(region), region).await,
        )
    });
    for (region, listed) in futures_util::future::join_all(listed).await {
        match listed {
            Ok(exports) => snapshot.keep_cloudformation_exports(region, exports),
            Err(err) => failures.push(format!("{err:#}")),
        }
    }
    if !wanted.is_empty() {
        let clients: BTreeMap<&str, Arc<dyn CloudFormationApi>> = (wanted.iter())
            .map(|(_, region)| (region.as_str(), regions.in_region(region)))
            .collect();
        let reads = wanted.iter().map(|(stack, region)| {
            let client = &clients[region.as_str()];
            async move { (stack, region, describe(&**client, stack, region).await) }
        });
        for (stack, region, read) in futures_util::future::join_all(reads).await {
            match read {
                Ok(found) => {
                    tracing::debug!("stack {stack} ({region}) from CloudFormation: {found:?}");
                    snapshot.keep_cloudformation(stack, region, found);
                }
                Err(err) => failures.push(format!("{err:#}")),
            }
        }
    }
    if !failures.is_empty() {
        anyhow::bail!("{}", failures.join("\n"));
    }
    Ok(())
}

/// A failed call as the fallback's messages quote it: `Code: message` when CloudFormation
/// answered (without the HTTP status the adapter's line adds), every cause otherwise.
fn reason(err: &CallError) -> String {
    match &err.code {
        Some(_) => match err.line.rsplit_once(" (HTTP ") {
            Some((line, status)) if status.ends_with(')') => line.to_string(),
            _ => err.line.clone(),
        },
        None => err.context.clone(),
    }
}

/// Reads one stack from CloudFormation.
async fn describe(
    api: &dyn CloudFormationApi,
    stack: &str,
    region: &str,
) -> anyhow::Result<CloudFormationStack> {
    match api.describe_stack(stack).await {
        Ok(None) => Ok(CloudFormationStack::Absent(None)),
        Ok(Some(described)) => {
            let outputs = (described.outputs.into_iter())
                .filter_map(|(key, value)| Some((key, Value::String(value?))))
                .collect();
            Ok(CloudFormationStack::described(&described.status, outputs))
        }
        // CloudFormation answers `ValidationError` "Stack with id X does not exist".
        Err(err)
            if matches!(err.code.as_deref(), Some("ValidationError") | None)
                && err.no_such_stack() =>
        {
            Ok(CloudFormationStack::Absent(None))
        }
        Err(err) => Err(anyhow::anyhow!(
            "reading the outputs of stack {stack} ({region}) from CloudFormation failed (cdkd has no state for it, and Fn::GetStackOutput reads it): DescribeStacks: {}; fix the access, or pass --no-cfn-fallback to read cdkd state only",
            reason(&err)
        )),
    }
}

/// CloudFormation's exports in one region: name → value.
async fn list_exports(
    api: &dyn CloudFormationApi,
    region: &str,
) -> anyhow::Result<BTreeMap<String, Value>> {
    let exports = api.list_exports().await.map_err(|err| {
        anyhow::anyhow!(
            "reading the exports of {region} from CloudFormation failed (no cdkd state exports a name Fn::ImportValue reads): ListExports: {}; fix the access, or pass --no-cfn-fallback to read cdkd state only",
            reason(&err)
        )
    })?;
    Ok((exports.into_iter())
        .map(|(name, value)| (name, Value::String(value)))
        .collect())
}
