//! Values from other stacks' state records: `Fn::ImportValue` (through `exportNames` and the
//! exports index) and `Fn::GetStackOutput`, for planning and deploying.
//!
//! [`StateSnapshot::load_for`] reads only the records a run's templates name: a
//! `Fn::GetStackOutput` producer by its key, an `Fn::ImportValue` producer through the region's
//! exports index (`_index/{region}/exports.json`); an export the index does not know, or names
//! a stack that no longer exports it, makes it scan that region's records and rebuild the index.
//!
//! A producer that cdkd has no record of (e.g. one `cdkd export` handed to CloudFormation) and
//! that this run does not deploy is read from CloudFormation instead:
//! [`StateSnapshot::read_cloudformation`] asks `DescribeStacks` once per (stack, region) for
//! `Fn::GetStackOutput` and `ListExports` once per region for `Fn::ImportValue`, before the
//! run, since lookups are synchronous. The reference stays weak: nothing locks the
//! CloudFormation stack's output, and neither kind of read is written down in the consumer's
//! record.
//!
//! A `Fn::GetStackOutput` with `RoleArn` reads another account's record:
//! [`StateSnapshot::read_cross_account`] assumes the role once per role ARN (the credentials are
//! kept for the run), and reads `cdkd-state-{account}` in that account, before the run.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::analyzer::intrinsics::Lookup;
use crate::analyzer::plan::ExternalValues;
use crate::analyzer::template::{StackRead, Template};
use crate::aws_env::AwsEnvironment;
use crate::cloudformation::{CallError, CloudFormation};
use crate::provisioning::preflight::NESTED_STACK;
use crate::state::backend::StateBackend;
use crate::state::bucket::{bucket_region, default_bucket_name, owned_s3_client};
use crate::state::exports_index::{self, ExportsIndex};
use crate::state::keys::StateKeys;
use crate::state::schema::StackState;
use crate::state::StateError;

/// Every stack record of the bucket, read once, answering cross-stack lookups.
#[derive(Debug, Clone, Default)]
pub struct StateSnapshot {
    records: BTreeMap<(String, String), StackState>,
    /// Stacks being deployed in this run that may not exist yet: their outputs are pending.
    pub pending: BTreeSet<String>,
    /// The plaintext of outputs that a stack deployed earlier in this run recorded masked
    /// (`NoEcho` data): handed to consumers of the same run, as the state spec says.
    secret_outputs: BTreeMap<(String, String), serde_json::Map<String, Value>>,
    /// What CloudFormation said about producers without a record, by (stack, region).
    cloudformation: BTreeMap<(String, String), CloudFormationStack>,
    /// The producer of an export, by (region, export name), from the exports index (or its
    /// rebuild); an export without an entry is looked for among the loaded records.
    export_producers: BTreeMap<(String, String), String>,
    /// CloudFormation's exports (`ListExports`) of the regions asked, by region: name → value.
    cloudformation_exports: BTreeMap<String, BTreeMap<String, Value>>,
    /// Other accounts' records read through a role, by (role ARN, stack, region): the record,
    /// or why it could not be read.
    cross_account:
        BTreeMap<(String, String, String), Result<Option<StackState>, CrossAccountError>>,
    /// Records that exist but that this cdkd cannot read (a newer schema, damaged JSON), with
    /// why, by (stack, region): a lookup that might need one fails by name rather than falling
    /// back to CloudFormation or to "no such stack".
    unreadable: BTreeMap<(String, String), String>,
}

/// Why another account's record could not be read through a role. Details are text: one
/// failure of a role is kept for each of its producers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CrossAccountError {
    /// The `RoleArn` is not an IAM role ARN.
    #[error("RoleArn {role} is not an IAM role ARN (arn:<partition>:iam::<account>:role/<name>)")]
    NotARole {
        /// The `RoleArn`.
        role: String,
    },
    /// The role cannot be assumed.
    #[error("cannot assume {role} to read the producer's state in account {account}: {detail}")]
    CannotAssume {
        /// The role.
        role: String,
        /// Its account.
        account: String,
        /// The credentials error.
        detail: String,
    },
    /// The producer's record cannot be read from the account's state bucket.
    #[error("reading stack {stack} ({region}) in account {account} through {role} (bucket {bucket}) failed: {detail}")]
    Unreadable {
        /// The producer stack.
        stack: String,
        /// Its region.
        region: String,
        /// The account.
        account: String,
        /// The role.
        role: String,
        /// The account's state bucket.
        bucket: String,
        /// The state layer's error.
        detail: String,
    },
}

/// What CloudFormation said about a `Fn::GetStackOutput` producer cdkd has no record of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloudFormationStack {
    /// No usable stack of that name: none at all (`None`), or one whose status
    /// (`ROLLBACK_COMPLETE`, `DELETE_*`) counts as absent.
    Absent(Option<String>),
    /// A stack still being created, or whose creation failed (its status): no outputs yet.
    NotReady(String),
    /// A created stack's outputs: `OutputKey` → `OutputValue` (a JSON string).
    Outputs(BTreeMap<String, Value>),
}

impl CloudFormationStack {
    /// Sorts a described stack by its status.
    pub fn described(status: &str, outputs: BTreeMap<String, Value>) -> CloudFormationStack {
        match status {
            // A create that rolled back left nothing; a deleted (or deleting) stack is going.
            "ROLLBACK_COMPLETE" | "DELETE_COMPLETE" | "DELETE_IN_PROGRESS" | "DELETE_FAILED" => {
                CloudFormationStack::Absent(Some(status.to_string()))
            }
            // Never created yet (a new stack's create or import, or its failure).
            "CREATE_IN_PROGRESS"
            | "CREATE_FAILED"
            | "ROLLBACK_IN_PROGRESS"
            | "ROLLBACK_FAILED"
            | "REVIEW_IN_PROGRESS"
            | "IMPORT_IN_PROGRESS"
            | "IMPORT_ROLLBACK_IN_PROGRESS"
            | "IMPORT_ROLLBACK_FAILED" => CloudFormationStack::NotReady(status.to_string()),
            _ => CloudFormationStack::Outputs(outputs),
        }
    }
}

/// Whether a `DescribeStacks` error says there is no such stack (CloudFormation answers
/// `ValidationError` "Stack with id X does not exist").
fn no_such_stack(code: Option<&str>, message: Option<&str>) -> bool {
    matches!(code, Some("ValidationError") | None)
        && message.is_some_and(|m| m.contains("does not exist"))
}

/// The producers that `Fn::GetStackOutput` in `template` names literally, as (stack, region):
/// anywhere in its resources' properties, its outputs and its conditions. A `Region` that is
/// absent or `{"Ref": "AWS::Region"}` is `consumer_region`; any other non-literal stack name or
/// region is left out (it is resolved, and reported, when the stack is planned).
pub fn output_producers(template: &Template, consumer_region: &str) -> BTreeSet<(String, String)> {
    fn walk(value: &Value, consumer_region: &str, found: &mut BTreeSet<(String, String)>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::Object(read)) = map
                    .get("Fn::GetStackOutput")
                    .filter(|read| read.get("RoleArn").is_none())
                {
                    let region = match read.get("Region") {
                        None => Some(consumer_region.to_string()),
                        Some(Value::String(region)) => Some(region.clone()),
                        Some(other)
                            if other.get("Ref").and_then(Value::as_str) == Some("AWS::Region") =>
                        {
                            Some(consumer_region.to_string())
                        }
                        Some(_) => None,
                    };
                    if let (Some(Value::String(stack)), Some(region)) =
                        (read.get("StackName"), region)
                    {
                        found.insert((stack.clone(), region));
                    }
                }
                map.values().for_each(|v| walk(v, consumer_region, found));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, consumer_region, found)),
            _ => {}
        }
    }
    let mut found = BTreeSet::new();
    for resource in template.resources.values() {
        resource
            .properties
            .values()
            .for_each(|v| walk(v, consumer_region, &mut found));
    }
    for output in template.outputs.values() {
        walk(&output.value, consumer_region, &mut found);
        if let Some(name) = &output.export_name {
            walk(name, consumer_region, &mut found);
        }
    }
    template
        .conditions
        .values()
        .for_each(|v| walk(v, consumer_region, &mut found));
    found
}

/// A failed CloudFormation call as the fallback's messages quote it: its code and message,
/// or (no answer: a timeout, no connection) its whole chain of causes.
fn reason(err: &CallError) -> String {
    match (&err.code, &err.message) {
        (Some(code), Some(message)) => format!("{code}: {message}"),
        (Some(code), None) => code.clone(),
        _ => err.context.clone(),
    }
}

/// Reads one stack from CloudFormation.
async fn describe(
    cloudformation: &CloudFormation,
    stack: &str,
    region: &str,
) -> anyhow::Result<CloudFormationStack> {
    match cloudformation.describe_stack(stack).await {
        Ok(None) => Ok(CloudFormationStack::Absent(None)),
        Ok(Some(described)) => {
            let outputs = (described.outputs.into_iter())
                .filter_map(|(key, value)| Some((key, Value::String(value?))))
                .collect();
            Ok(CloudFormationStack::described(&described.status, outputs))
        }
        Err(err) if no_such_stack(err.code.as_deref(), err.message.as_deref()) => {
            Ok(CloudFormationStack::Absent(None))
        }
        Err(err) => Err(anyhow::anyhow!(
            "reading the outputs of stack {stack} ({region}) from CloudFormation failed (cdkd has no state for it, and Fn::GetStackOutput reads it): DescribeStacks: {}; fix the access, or pass --no-cfn-fallback to read cdkd state only",
            reason(&err)
        )),
    }
}

/// CloudFormation's exports in one region (every page): name → value.
async fn list_exports(
    cloudformation: &CloudFormation,
    region: &str,
) -> anyhow::Result<BTreeMap<String, Value>> {
    let exports = cloudformation.exports().await.map_err(|err| {
        anyhow::anyhow!(
            "reading the exports of {region} from CloudFormation failed (no cdkd state exports a name Fn::ImportValue reads): ListExports: {}; fix the access, or pass --no-cfn-fallback to read cdkd state only",
            reason(&err)
        )
    })?;
    Ok((exports.into_iter())
        .map(|(name, value)| (name, Value::String(value)))
        .collect())
}

/// The literal `Fn::GetStackOutput` reads with a `RoleArn` in `template`, as (role, stack,
/// region); an absent `Region` (or `{"Ref": "AWS::Region"}`) is `consumer_region`.
pub fn cross_account_reads(
    template: &Template,
    consumer_region: &str,
) -> BTreeSet<(String, String, String)> {
    let mut found = BTreeSet::new();
    walk_reads(template, &mut |read| {
        if let (Some(Value::String(role)), Some(Value::String(stack))) =
            (read.get("RoleArn"), read.get("StackName"))
        {
            if let Some(region) = literal_region(read, consumer_region) {
                found.insert((role.clone(), stack.clone(), region));
            }
        }
    });
    found
}

/// The region a `Fn::GetStackOutput` names literally (absent or `{"Ref": "AWS::Region"}`:
/// the consumer's); `None` for any other expression.
fn literal_region(read: &serde_json::Map<String, Value>, consumer_region: &str) -> Option<String> {
    match read.get("Region") {
        None => Some(consumer_region.to_string()),
        Some(Value::String(region)) => Some(region.clone()),
        Some(other) if other.get("Ref").and_then(Value::as_str) == Some("AWS::Region") => {
            Some(consumer_region.to_string())
        }
        Some(_) => None,
    }
}

/// Calls `visit` with the argument of every `Fn::GetStackOutput` in the template's resource
/// properties, outputs (and export names) and conditions.
fn walk_reads(template: &Template, visit: &mut dyn FnMut(&serde_json::Map<String, Value>)) {
    fn walk(value: &Value, visit: &mut dyn FnMut(&serde_json::Map<String, Value>)) {
        match value {
            Value::Object(map) => {
                if let Some(Value::Object(read)) = map.get("Fn::GetStackOutput") {
                    visit(read);
                }
                map.values().for_each(|v| walk(v, visit));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, visit)),
            _ => {}
        }
    }
    for resource in template.resources.values() {
        resource.properties.values().for_each(|v| walk(v, visit));
    }
    for output in template.outputs.values() {
        walk(&output.value, visit);
        if let Some(name) = &output.export_name {
            walk(name, visit);
        }
    }
    template.conditions.values().for_each(|v| walk(v, visit));
}

/// Whether `template` reads other stacks in a way [`StateSnapshot::load_for`] cannot follow:
/// a computed `Fn::ImportValue` name or `Fn::GetStackOutput` stack or region, or a nested
/// stack (its child's reads are in another template). Such a run reads every record.
pub fn needs_every_record(template: &Template) -> bool {
    fn computed(value: &Value) -> bool {
        match value {
            Value::Object(map) => {
                if map
                    .get("Fn::ImportValue")
                    .is_some_and(|name| !name.is_string())
                {
                    return true;
                }
                if let Some(Value::Object(read)) = map.get("Fn::GetStackOutput") {
                    if !read.get("StackName").is_some_and(Value::is_string)
                        || literal_region(read, "").is_none()
                    {
                        return true;
                    }
                }
                map.values().any(computed)
            }
            Value::Array(items) => items.iter().any(computed),
            _ => false,
        }
    }
    template
        .resources
        .values()
        .any(|r| r.kind == NESTED_STACK || r.properties.values().any(computed))
        || template.outputs.values().any(|o| computed(&o.value))
        || template.conditions.values().any(computed)
}

/// Assumes `role` and reads the records of `producers` (stack, region) from its account's
/// canonical state bucket; `Err` when the role or the bucket cannot be reached at all.
async fn read_through_role(
    aws: &AwsEnvironment,
    keys: &StateKeys,
    role: &str,
    producers: &[(String, String)],
) -> Result<Vec<Result<Option<StackState>, CrossAccountError>>, CrossAccountError> {
    let account = role_account(role).ok_or_else(|| CrossAccountError::NotARole {
        role: role.to_string(),
    })?;
    let assumed = aws.assuming(role).await;
    // The assume happens on the first call; failing there names the role.
    assumed
        .credentials()
        .await
        .map_err(|err| CrossAccountError::CannotAssume {
            role: role.to_string(),
            account: account.clone(),
            detail: err.to_string(),
        })?;
    let bucket = default_bucket_name(&account);
    // The bucket must be the role's account's: S3 refuses it otherwise.
    let region = bucket_region(&assumed, &bucket).await;
    let client = owned_s3_client(&assumed, &region, &account);
    let backend = StateBackend::new(client, &bucket, keys.clone());
    let reads = producers.iter().map(|(stack, region)| {
        let (backend, account, bucket) = (&backend, &account, &bucket);
        async move {
            let loaded = backend.load(stack, region).await;
            loaded
                .map(|s| s.map(|s| s.state))
                .map_err(|err| CrossAccountError::Unreadable {
                    stack: stack.clone(),
                    region: region.clone(),
                    account: account.clone(),
                    role: role.to_string(),
                    bucket: bucket.clone(),
                    detail: err.to_string(),
                })
        }
    });
    Ok(futures_util::future::join_all(reads).await)
}

/// The account of an IAM role ARN.
pub fn role_account(role: &str) -> Option<String> {
    let mut parts = role.split(':');
    let (arn, _partition, service, _region, account, resource) = (
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
    );
    (arn == "arn"
        && service == "iam"
        && account.len() == 12
        && account.bytes().all(|b| b.is_ascii_digit())
        && resource.starts_with("role/"))
    .then(|| account.to_string())
}

impl StateSnapshot {
    /// Reads every record, all at once (cross-stack lookups are rare enough that one scan per
    /// run is fine).
    pub async fn load(backend: &StateBackend) -> Result<StateSnapshot, StateError> {
        let mut records = BTreeMap::new();
        let mut unreadable = BTreeMap::new();
        let reads = backend
            .list_stacks()
            .await?
            .into_iter()
            .filter_map(|found| {
                let region = found.region?;
                Some(async move {
                    let loaded = backend.load(&found.stack, &region).await;
                    (found.stack, region, loaded)
                })
            });
        for (stack, region, loaded) in futures_util::future::join_all(reads).await {
            // Another stack's unreadable record must not stop this one: it is reported, and a
            // reference to that stack then fails by name.
            match loaded {
                Ok(Some(stored)) => {
                    records.insert((stack, region), stored.state);
                }
                Ok(None) => {}
                Err(err @ StateError::Schema { .. }) => {
                    tracing::warn!("skipping the record of stack {stack} ({region}): {err}; a reference to it fails");
                    unreadable.insert((stack, region), err.to_string());
                }
                Err(err) => return Err(err),
            }
        }
        Ok(StateSnapshot {
            records,
            unreadable,
            ..StateSnapshot::default()
        })
    }

    /// Reads only the records that `reads` (what each consumer reads, in its region) need: a
    /// `Fn::GetStackOutput` producer by its key, an export's producer through the region's
    /// exports index. A region whose index is missing, does not know an export, or names a
    /// stack whose record no longer exports it is scanned, and its index rebuilt.
    pub async fn load_for(
        backend: &StateBackend,
        reads: impl IntoIterator<Item = (StackRead, String)>,
    ) -> Result<StateSnapshot, StateError> {
        let mut wanted: BTreeSet<(String, String)> = BTreeSet::new();
        let mut names: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (read, region) in reads {
            match read {
                StackRead::Output {
                    stack, region: r, ..
                } => {
                    wanted.insert((stack, r.unwrap_or(region)));
                }
                StackRead::Export(name) => {
                    names.entry(region).or_default().insert(name);
                }
            }
        }
        let mut snapshot = StateSnapshot::default();
        let mut scans: BTreeSet<String> = BTreeSet::new();
        let indexes = futures_util::future::join_all(names.keys().map(|region| async move {
            (region.clone(), exports_index::read(backend, region).await)
        }))
        .await;
        for (region, index) in indexes {
            let index = match index {
                Ok(Some((index, _))) => index,
                Ok(None) => {
                    scans.insert(region);
                    continue;
                }
                Err(err) => {
                    tracing::debug!("exports index of {region} unreadable: {err}");
                    scans.insert(region);
                    continue;
                }
            };
            for name in &names[&region] {
                match index.exports.get(name) {
                    Some(entry) => {
                        wanted.insert((entry.stack.clone(), region.clone()));
                        snapshot
                            .export_producers
                            .insert((region.clone(), name.clone()), entry.stack.clone());
                    }
                    None => {
                        scans.insert(region.clone());
                    }
                }
            }
        }
        snapshot.load_records(backend, wanted).await?;
        // An entry whose record no longer exports the name (a partial destroy, a hand-edited
        // record) is stale: the region is scanned like a missing entry.
        for ((region, name), stack) in &snapshot.export_producers {
            let exported = snapshot
                .record(stack, region)
                .is_some_and(|s| s.importable_output_keys().contains(&name.as_str()));
            if !exported {
                scans.insert(region.clone());
            }
        }
        for region in scans {
            snapshot.scan_region(backend, &region).await?;
        }
        Ok(snapshot)
    }

    /// Loads the records of `keys` (stack, region) that exist, all at once.
    async fn load_records(
        &mut self,
        backend: &StateBackend,
        keys: BTreeSet<(String, String)>,
    ) -> Result<(), StateError> {
        let reads = keys.into_iter().map(|(stack, region)| async move {
            let loaded = backend.load(&stack, &region).await;
            (stack, region, loaded)
        });
        for (stack, region, loaded) in futures_util::future::join_all(reads).await {
            match loaded {
                Ok(Some(stored)) => {
                    self.records.insert((stack, region), stored.state);
                }
                Ok(None) => {}
                Err(err @ StateError::Schema { .. }) => {
                    tracing::warn!("skipping the record of stack {stack} ({region}): {err}; a reference to it fails");
                    self.unreadable.insert((stack, region), err.to_string());
                }
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    /// Reads every record of `region` and rebuilds its exports index from them (written back
    /// when it differs from the one stored; a failed write only costs the next reader a scan).
    async fn scan_region(
        &mut self,
        backend: &StateBackend,
        region: &str,
    ) -> Result<(), StateError> {
        let keys: BTreeSet<(String, String)> = backend
            .list_stacks()
            .await?
            .into_iter()
            .filter_map(|found| Some((found.stack, found.region?)))
            .filter(|(stack, r)| r == region && self.record(stack, r).is_none())
            .collect();
        self.load_records(backend, keys).await?;
        let (rebuilt, warnings) = ExportsIndex::rebuild(
            region,
            self.records
                .iter()
                .filter(|((_, r), _)| r == region)
                .map(|(_, state)| state),
        );
        for warning in warnings {
            tracing::warn!("{warning}");
        }
        self.export_producers.retain(|(r, _), _| r != region);
        for (name, entry) in &rebuilt.exports {
            self.export_producers
                .insert((region.to_string(), name.clone()), entry.stack.clone());
        }
        let stored = exports_index::read(backend, region).await.ok().flatten();
        if stored.map(|(index, _)| index.exports) != Some(rebuilt.exports.clone()) {
            if let Err(err) = exports_index::write(backend, &rebuilt).await {
                tracing::warn!("could not write the rebuilt exports index of {region}: {err}");
            }
        }
        Ok(())
    }

    /// The `Fn::GetStackOutput` producers of `consumers` (template, consumer region) to read
    /// from CloudFormation: those without a record, not being deployed in this run (`in_run`,
    /// or [`StateSnapshot::pending`]) and not read already.
    pub fn cloudformation_candidates<'t>(
        &self,
        consumers: impl IntoIterator<Item = (&'t Template, &'t str)>,
        in_run: &BTreeSet<String>,
    ) -> BTreeSet<(String, String)> {
        consumers
            .into_iter()
            .flat_map(|(template, region)| output_producers(template, region))
            .filter(|(stack, region)| {
                !in_run.contains(stack)
                    && !self.pending.contains(stack)
                    && self.record(stack, region).is_none()
                    && self.cloudformation(stack, region).is_none()
            })
            .collect()
    }

    /// Reads from CloudFormation (`DescribeStacks`, all at once, once per stack and region) the
    /// outputs of every `Fn::GetStackOutput` producer of `consumers` that
    /// [`StateSnapshot::cloudformation_candidates`] names. A stack CloudFormation does not know
    /// is kept as absent; any other error fails, naming the stack, its region and the error.
    pub async fn read_cloudformation<'t>(
        &mut self,
        aws: &AwsEnvironment,
        consumers: impl IntoIterator<Item = (&'t Template, &'t str)>,
        in_run: &BTreeSet<String>,
    ) -> anyhow::Result<()> {
        let cloudformation_in = |region: &str| CloudFormation::new(aws, region);
        self.read_cloudformation_over(cloudformation_in, consumers, in_run)
            .await
    }

    /// [`StateSnapshot::read_cloudformation`] through `cloudformation_in` (CloudFormation in
    /// a region: the SDK, or a fake).
    pub async fn read_cloudformation_over<'t>(
        &mut self,
        cloudformation_in: impl Fn(&str) -> CloudFormation,
        consumers: impl IntoIterator<Item = (&'t Template, &'t str)>,
        in_run: &BTreeSet<String>,
    ) -> anyhow::Result<()> {
        let consumers: Vec<(&Template, &str)> = consumers.into_iter().collect();
        let export_regions = self.export_candidates(consumers.iter().copied());
        let wanted = self.cloudformation_candidates(consumers.iter().copied(), in_run);
        let mut failures = Vec::new();
        let cloudformation_in = &cloudformation_in;
        let listed = export_regions.iter().map(|region| async move {
            let cloudformation = cloudformation_in(region);
            (region, list_exports(&cloudformation, region).await)
        });
        for (region, listed) in futures_util::future::join_all(listed).await {
            match listed {
                Ok(exports) => self.keep_cloudformation_exports(region, exports),
                Err(err) => failures.push(format!("{err:#}")),
            }
        }
        if wanted.is_empty() {
            if !failures.is_empty() {
                anyhow::bail!("{}", failures.join("\n"));
            }
            return Ok(());
        }
        let clients: BTreeMap<&str, CloudFormation> = wanted
            .iter()
            .map(|(_, region)| (region.as_str(), cloudformation_in(region)))
            .collect();
        let reads = wanted.iter().map(|(stack, region)| {
            let cloudformation = &clients[region.as_str()];
            async move { (stack, region, describe(cloudformation, stack, region).await) }
        });
        for (stack, region, read) in futures_util::future::join_all(reads).await {
            match read {
                Ok(found) => {
                    tracing::debug!("stack {stack} ({region}) from CloudFormation: {found:?}");
                    self.keep_cloudformation(stack, region, found);
                }
                Err(err) => failures.push(format!("{err:#}")),
            }
        }
        if !failures.is_empty() {
            anyhow::bail!("{}", failures.join("\n"));
        }
        Ok(())
    }

    /// Keeps what CloudFormation said about a producer cdkd has no record of.
    pub fn keep_cloudformation(&mut self, stack: &str, region: &str, found: CloudFormationStack) {
        self.cloudformation
            .insert((stack.to_string(), region.to_string()), found);
    }

    /// What CloudFormation said about a producer, if it was asked.
    pub fn cloudformation(&self, stack: &str, region: &str) -> Option<&CloudFormationStack> {
        self.cloudformation
            .get(&(stack.to_string(), region.to_string()))
    }

    /// Replaces (or adds) one record, e.g. a producer deployed earlier in the same run: the
    /// latest writer of its exports.
    pub fn update(&mut self, state: StackState) {
        let region = state.region.clone().unwrap_or_default();
        for name in state.importable_output_keys() {
            self.export_producers
                .insert((region.clone(), name.to_string()), state.stack_name.clone());
        }
        self.records
            .insert((state.stack_name.clone(), region), state);
    }

    /// Keeps, for this run only, the plaintext of a stack's masked outputs.
    pub fn keep_secret_outputs(
        &mut self,
        stack: &str,
        region: &str,
        outputs: serde_json::Map<String, Value>,
    ) {
        if !outputs.is_empty() {
            self.secret_outputs
                .insert((stack.to_string(), region.to_string()), outputs);
        }
    }

    /// The plaintext of a masked output of a stack deployed earlier in this run.
    pub fn secret_output(&self, stack: &str, region: &str, output: &str) -> Option<&Value> {
        self.secret_outputs
            .get(&(stack.to_string(), region.to_string()))?
            .get(output)
    }

    /// The producer of an export in `region`, and its value: the producer the exports index
    /// names, else the latest written record that exports it.
    pub fn export(&self, region: &str, name: &str) -> Option<(&str, &Value)> {
        let exports = |state: &StackState| state.importable_output_keys().contains(&name);
        if let Some(stack) = (self.export_producers).get(&(region.to_string(), name.to_string())) {
            if let Some(state) = self.record(stack, region).filter(|s| exports(s)) {
                return Some((stack.as_str(), &state.outputs[name]));
            }
        }
        self.records
            .iter()
            .filter(|((_, r), state)| r == region && exports(state))
            .max_by_key(|((stack, _), state)| (state.last_modified, stack.clone()))
            .map(|((stack, _), state)| (stack.as_str(), &state.outputs[name]))
    }

    /// Why the record of `stack` in `region` exists but cannot be read, if it cannot.
    pub fn unreadable(&self, stack: &str, region: &str) -> Option<&str> {
        self.unreadable
            .get(&(stack.to_string(), region.to_string()))
            .map(String::as_str)
    }

    /// The records of `region` that exist but cannot be read: any might export a name.
    fn unreadable_in(&self, region: &str) -> Vec<String> {
        (self.unreadable.iter())
            .filter(|((_, r), _)| r == region)
            .map(|((stack, _), reason)| format!("{stack} ({reason})"))
            .collect()
    }

    /// Records a record that cannot be read (tests).
    #[cfg(test)]
    pub fn keep_unreadable(&mut self, stack: &str, region: &str, reason: &str) {
        self.unreadable
            .insert((stack.to_string(), region.to_string()), reason.to_string());
    }

    /// CloudFormation's export `name` in `region`, if CloudFormation was asked for the region.
    pub fn cloudformation_export(&self, region: &str, name: &str) -> Option<&Value> {
        self.cloudformation_exports.get(region)?.get(name)
    }

    /// Keeps CloudFormation's exports of a region.
    pub fn keep_cloudformation_exports(&mut self, region: &str, exports: BTreeMap<String, Value>) {
        self.cloudformation_exports
            .insert(region.to_string(), exports);
    }

    /// Whether CloudFormation was asked for the exports of `region`.
    pub fn asked_cloudformation_exports(&self, region: &str) -> bool {
        self.cloudformation_exports.contains_key(region)
    }

    /// The regions whose CloudFormation exports `consumers` (every stack of the run) need: a
    /// literal `Fn::ImportValue` name that no loaded record exports and no stack of the run
    /// exports literally, in a region not asked yet.
    pub fn export_candidates<'t>(
        &self,
        consumers: impl IntoIterator<Item = (&'t Template, &'t str)>,
    ) -> BTreeSet<String> {
        let consumers: Vec<(&Template, &str)> = consumers.into_iter().collect();
        let in_run: BTreeSet<(String, &str)> = (consumers.iter())
            .flat_map(|(template, region)| {
                (template.outputs.values())
                    .filter_map(|o| o.export_name.as_ref()?.as_str().map(str::to_string))
                    .map(move |name| (name, *region))
            })
            .collect();
        consumers
            .into_iter()
            .flat_map(|(template, region)| {
                template
                    .stack_reads()
                    .into_iter()
                    .filter_map(move |read| match read {
                        StackRead::Export(name) => Some((name, region.to_string())),
                        StackRead::Output { .. } => None,
                    })
            })
            .filter(|(name, region)| {
                self.export(region, name).is_none()
                    && !self.asked_cloudformation_exports(region)
                    && !in_run.contains(&(name.clone(), region.as_str()))
            })
            .map(|(_, region)| region)
            .collect()
    }

    /// Another account's record read through `role`, or why it could not be read; `None`
    /// when it was not read before the run.
    pub fn cross_account(
        &self,
        role: &str,
        stack: &str,
        region: &str,
    ) -> Option<&Result<Option<StackState>, CrossAccountError>> {
        (self.cross_account).get(&(role.to_string(), stack.to_string(), region.to_string()))
    }

    /// Keeps another account's record (or why it could not be read).
    pub fn keep_cross_account(
        &mut self,
        role: &str,
        stack: &str,
        region: &str,
        found: Result<Option<StackState>, CrossAccountError>,
    ) {
        self.cross_account.insert(
            (role.to_string(), stack.to_string(), region.to_string()),
            found,
        );
    }

    /// Reads, once per role ARN (its assumed credentials are kept for the run), the records
    /// of every `Fn::GetStackOutput` with `RoleArn` in `consumers`: the role's account's
    /// canonical state bucket `cdkd-state-{account}`, in the region `GetBucketLocation`
    /// answers, under the same state prefix.
    pub async fn read_cross_account<'t>(
        &mut self,
        aws: &AwsEnvironment,
        keys: &StateKeys,
        consumers: impl IntoIterator<Item = (&'t Template, &'t str)>,
    ) {
        let wanted: BTreeSet<(String, String, String)> = consumers
            .into_iter()
            .flat_map(|(template, region)| cross_account_reads(template, region))
            .filter(|(role, stack, region)| self.cross_account(role, stack, region).is_none())
            .collect();
        let mut by_role: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for (role, stack, region) in wanted {
            by_role.entry(role).or_default().push((stack, region));
        }
        let reads = by_role.into_iter().map(|(role, producers)| async move {
            let found = read_through_role(aws, keys, &role, &producers).await;
            (role, producers, found)
        });
        for (role, producers, found) in futures_util::future::join_all(reads).await {
            match found {
                Ok(records) => {
                    for ((stack, region), record) in producers.into_iter().zip(records) {
                        self.keep_cross_account(&role, &stack, &region, record);
                    }
                }
                Err(reason) => {
                    for (stack, region) in producers {
                        self.keep_cross_account(&role, &stack, &region, Err(reason.clone()));
                    }
                }
            }
        }
    }

    /// Every record: (stack, region, record).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str, &StackState)> {
        self.records
            .iter()
            .map(|((stack, region), state)| (stack.as_str(), region.as_str(), state))
    }

    /// A stack's record.
    pub fn record(&self, stack: &str, region: &str) -> Option<&StackState> {
        self.records.get(&(stack.to_string(), region.to_string()))
    }
}

/// The stacks that read `stack` (in `region`) according to their records: one row per
/// consumer and kind of read, `Consumer (region): Fn::ImportValue A, B` from `imports` and
/// `Consumer (region): Fn::GetStackOutput Out` from `outputReads` (reads answered by
/// CloudFormation or through a role are not recorded, so not listed).
pub fn downstream_consumers(snapshot: &StateSnapshot, stack: &str, region: &str) -> Vec<String> {
    let mut rows = Vec::new();
    for (consumer, consumer_region, state) in snapshot.iter() {
        if consumer == stack && consumer_region == region {
            continue;
        }
        let imported: BTreeSet<&str> = (state.imports.iter().flatten())
            .filter(|i| i.source_stack == stack && i.source_region == region)
            .map(|i| i.export_name.as_str())
            .collect();
        let read: BTreeSet<&str> = (state.output_reads.iter().flatten())
            .filter(|r| r.source_stack == stack && r.source_region == region)
            .map(|r| r.output_name.as_str())
            .collect();
        for (kind, names) in [("Fn::ImportValue", imported), ("Fn::GetStackOutput", read)] {
            if !names.is_empty() {
                let names: Vec<&str> = names.into_iter().collect();
                rows.push(format!(
                    "{consumer} ({consumer_region}): {kind} {}",
                    names.join(", ")
                ));
            }
        }
    }
    rows
}

/// Why an export cannot be imported: no record exports it (and CloudFormation does not, when
/// it was asked).
pub fn missing_export(snapshot: &StateSnapshot, region: &str, name: &str) -> String {
    if snapshot.asked_cloudformation_exports(region) {
        format!("no deployed stack in {region} exports {name} (neither in cdkd state nor in CloudFormation); deploy the producer first")
    } else {
        format!("no deployed stack in {region} exports {name}; deploy the producer first")
    }
}

/// Another account's output, as read before the run.
pub fn cross_account_output(
    snapshot: &StateSnapshot,
    role: &str,
    stack: &str,
    region: &str,
    output: &str,
) -> Lookup {
    match snapshot.cross_account(role, stack, region) {
        None => Lookup::Missing(format!(
            "stack {stack} ({region}) through {role} was not read before the run; name StackName, Region and RoleArn literally"
        )),
        Some(Err(reason)) => Lookup::Missing(reason.to_string()),
        Some(Ok(None)) => Lookup::Missing(format!(
            "stack {stack} has no state in {region} in the account of {role}; deploy it there first"
        )),
        Some(Ok(Some(state))) => match state.outputs.get(output) {
            Some(value) => Lookup::Known(value.clone()),
            None => Lookup::Missing(format!(
                "stack {stack} ({region}) in the account of {role} has no output {output}"
            )),
        },
    }
}

/// The lookups of one consumer stack (its region) over a snapshot.
pub struct SnapshotLookups<'a> {
    /// The snapshot.
    pub snapshot: &'a StateSnapshot,
    /// The consumer's region.
    pub region: &'a str,
}

impl ExternalValues for SnapshotLookups<'_> {
    fn import_value(&self, export_name: &str) -> Lookup {
        let unreadable = self.snapshot.unreadable_in(self.region);
        match self.snapshot.export(self.region, export_name) {
            Some((_, value)) => Lookup::Known(value.clone()),
            // Fail closed: a record this cdkd cannot read may be the producer.
            None if !unreadable.is_empty() => Lookup::Missing(format!(
                "no readable record in {} exports {export_name}, and these records cannot be read, so one of them may: {}; upgrade cdkd or repair the record",
                self.region,
                unreadable.join("; ")
            )),
            None => match self
                .snapshot
                .cloudformation_export(self.region, export_name)
            {
                Some(value) => Lookup::Known(value.clone()),
                None if !self.snapshot.pending.is_empty() => Lookup::Unknown,
                None => Lookup::Missing(missing_export(self.snapshot, self.region, export_name)),
            },
        }
    }

    fn stack_output_as(&self, role: &str, stack: &str, region: &str, output: &str) -> Lookup {
        cross_account_output(self.snapshot, role, stack, region, output)
    }

    fn stack_output(&self, stack: &str, region: &str, output: &str) -> Lookup {
        match self.snapshot.record(stack, region) {
            Some(state) => match state.outputs.get(output) {
                Some(value) => Lookup::Known(value.clone()),
                None if self.snapshot.pending.contains(stack) => Lookup::Unknown,
                None => Lookup::Missing(format!("stack {stack} ({region}) has no output {output}")),
            },
            // Fail closed: not "no such stack", and not CloudFormation's stack of that name.
            None if self.snapshot.unreadable(stack, region).is_some() => Lookup::Missing(format!(
                "stack {stack} ({region}) has a record this cdkd cannot read, so its outputs are unknown: {}; upgrade cdkd or repair the record",
                self.snapshot.unreadable(stack, region).unwrap_or_default()
            )),
            None if self.snapshot.pending.contains(stack) => Lookup::Unknown,
            None => match self.snapshot.cloudformation(stack, region) {
                None => Lookup::Missing(format!(
                    "stack {stack} has no state in {region}; deploy it first"
                )),
                Some(CloudFormationStack::Absent(None)) => Lookup::Missing(format!(
                    "stack {stack} has no state in {region} (and CloudFormation has no stack of that name); deploy it first"
                )),
                Some(CloudFormationStack::Absent(Some(status))) => Lookup::Missing(format!(
                    "stack {stack} has no state in {region} (and CloudFormation's stack of that name is {status}, which counts as no stack); deploy it first"
                )),
                Some(CloudFormationStack::NotReady(status)) => Lookup::Missing(format!(
                    "stack {stack} has no state in {region}, and its CloudFormation stack is {status}, not created yet; deploy again once it is"
                )),
                Some(CloudFormationStack::Outputs(outputs)) => match outputs.get(output) {
                    Some(value) => Lookup::Known(value.clone()),
                    None => Lookup::Missing(format!(
                        "stack {stack} ({region}) in CloudFormation has no output {output}"
                    )),
                },
            },
        }
    }

    fn availability_zones(&self, _region: &str) -> Lookup {
        // Answered by AWS at deploy time; a plan shows the zones as known after deploy.
        Lookup::Unknown
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const REGION: &str = "us-east-1";

    fn outputs(pairs: &[(&str, &str)]) -> CloudFormationStack {
        CloudFormationStack::Outputs(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect(),
        )
    }

    fn lookup(snapshot: &StateSnapshot, stack: &str, output: &str) -> Lookup {
        SnapshotLookups {
            snapshot,
            region: REGION,
        }
        .stack_output(stack, REGION, output)
    }

    fn missing(found: Lookup) -> String {
        match found {
            Lookup::Missing(message) => message,
            other => panic!("expected Missing, found {other:?}"),
        }
    }

    #[test]
    fn downstream_consumers_come_from_imports_and_output_reads() {
        use crate::state::schema::{StateImportEntry, StateOutputReadEntry};
        let mut snapshot = StateSnapshot::default();
        let mut both = StackState::new("Both", REGION);
        both.imports = Some(vec![StateImportEntry {
            source_stack: "Producer".into(),
            source_region: REGION.into(),
            export_name: "Shared".into(),
            extra: Default::default(),
        }]);
        both.output_reads = Some(vec![
            StateOutputReadEntry {
                source_stack: "Producer".into(),
                source_region: REGION.into(),
                output_name: "Out".into(),
                extra: Default::default(),
            },
            StateOutputReadEntry {
                source_stack: "Producer".into(),
                source_region: "eu-west-1".into(),
                output_name: "Elsewhere".into(),
                extra: Default::default(),
            },
        ]);
        snapshot.update(both);
        // A pre-v8 record (no outputReads) and an unrelated stack add nothing.
        snapshot.update(StackState::new("Unrelated", REGION));
        assert_eq!(
            downstream_consumers(&snapshot, "Producer", REGION),
            [
                "Both (us-east-1): Fn::ImportValue Shared",
                "Both (us-east-1): Fn::GetStackOutput Out"
            ]
        );
        assert!(downstream_consumers(&snapshot, "Unrelated", REGION).is_empty());
    }

    #[test]
    fn an_export_comes_from_the_indexed_producer_then_the_latest_record_then_cloudformation() {
        let exporting = |stack: &str, written: i64, value: &str| {
            let mut state = StackState::new(stack, REGION);
            state.outputs.insert("Shared".into(), json!(value));
            state.export_names = Some(vec!["Shared".into()]);
            state.last_modified = written;
            state
        };
        let mut snapshot = StateSnapshot::default();
        snapshot
            .records
            .insert(("Old".into(), REGION.into()), exporting("Old", 1, "old"));
        snapshot
            .records
            .insert(("New".into(), REGION.into()), exporting("New", 2, "new"));
        // Without an index entry: the latest written record.
        assert_eq!(
            snapshot.export(REGION, "Shared"),
            Some(("New", &json!("new")))
        );
        // The index names the producer.
        snapshot
            .export_producers
            .insert((REGION.into(), "Shared".into()), "Old".into());
        assert_eq!(
            snapshot.export(REGION, "Shared"),
            Some(("Old", &json!("old")))
        );
        // A stack deployed in this run is the latest writer.
        snapshot.update(exporting("Run", 3, "run"));
        assert_eq!(
            snapshot.export(REGION, "Shared"),
            Some(("Run", &json!("run")))
        );
        // CloudFormation answers what no record exports, once asked.
        let lookups = SnapshotLookups {
            snapshot: &snapshot,
            region: REGION,
        };
        assert_eq!(
            missing(lookups.import_value("CfnOnly")),
            "no deployed stack in us-east-1 exports CfnOnly; deploy the producer first"
        );
        snapshot.keep_cloudformation_exports(
            REGION,
            BTreeMap::from([("CfnOnly".to_string(), json!("from-cfn"))]),
        );
        let lookups = SnapshotLookups {
            snapshot: &snapshot,
            region: REGION,
        };
        assert_eq!(
            lookups.import_value("CfnOnly"),
            Lookup::Known(json!("from-cfn"))
        );
        assert_eq!(
            missing(lookups.import_value("Nope")),
            "no deployed stack in us-east-1 exports Nope (neither in cdkd state nor in CloudFormation); deploy the producer first"
        );
    }

    #[test]
    fn export_candidates_skip_what_records_or_the_run_export() {
        let consumer = Template::parse(&json!({"Resources": {"R": {"Type": "AWS::SNS::Topic",
            "Properties": {"DisplayName": {"Fn::Join": ["", [
                {"Fn::ImportValue": "InRecord"}, {"Fn::ImportValue": "InRun"}]]}}}}}))
        .unwrap();
        let producer = Template::parse(&json!({"Resources": {"Q": {"Type": "AWS::SQS::Queue"}},
            "Outputs": {"O": {"Value": "v", "Export": {"Name": "InRun"}}}}))
        .unwrap();
        let mut snapshot = StateSnapshot::default();
        let mut recorded = StackState::new("Recorded", REGION);
        recorded.outputs.insert("InRecord".into(), json!("x"));
        snapshot.update(recorded);
        let consumers = [(&consumer, REGION), (&producer, REGION)];
        assert!(snapshot.export_candidates(consumers).is_empty());
        let other = Template::parse(&json!({"Resources": {"R": {"Type": "AWS::SNS::Topic",
            "Properties": {"DisplayName": {"Fn::ImportValue": "Elsewhere"}}}}}))
        .unwrap();
        assert_eq!(
            snapshot.export_candidates([(&other, REGION)]),
            BTreeSet::from([REGION.to_string()])
        );
        snapshot.keep_cloudformation_exports(REGION, BTreeMap::new());
        assert!(snapshot.export_candidates([(&other, REGION)]).is_empty());
    }

    #[test]
    fn cross_account_reads_are_literal_role_reads_and_roles_name_their_account() {
        let template = Template::parse(&json!({"Resources": {"R": {"Type": "AWS::SNS::Topic",
            "Properties": {"DisplayName": {"Fn::Join": ["", [
                {"Fn::GetStackOutput": {"StackName": "P", "OutputName": "O",
                    "RoleArn": "arn:aws:iam::222222222222:role/Reader"}},
                {"Fn::GetStackOutput": {"StackName": "P", "OutputName": "O", "Region": "eu-west-1",
                    "RoleArn": "arn:aws:iam::222222222222:role/Reader"}},
                {"Fn::GetStackOutput": {"StackName": "Same", "OutputName": "O"}}]]}}}}}))
        .unwrap();
        let role = "arn:aws:iam::222222222222:role/Reader".to_string();
        assert_eq!(
            cross_account_reads(&template, REGION),
            BTreeSet::from([
                (role.clone(), "P".to_string(), "eu-west-1".to_string()),
                (role.clone(), "P".to_string(), REGION.to_string()),
            ])
        );
        // A role read is not a CloudFormation candidate.
        let wanted = StateSnapshot::default()
            .cloudformation_candidates([(&template, REGION)], &BTreeSet::new());
        assert_eq!(
            wanted,
            BTreeSet::from([("Same".to_string(), REGION.to_string())])
        );
        assert_eq!(role_account(&role).as_deref(), Some("222222222222"));
        assert_eq!(
            role_account("arn:aws-cn:iam::123456789012:role/a/b").as_deref(),
            Some("123456789012")
        );
        assert_eq!(role_account("arn:aws:iam::123:role/x"), None);
        assert_eq!(role_account("arn:aws:iam::123456789012:user/x"), None);
        let mut snapshot = StateSnapshot::default();
        let mut producer = StackState::new("P", REGION);
        producer.outputs.insert("O".into(), json!("theirs"));
        snapshot.keep_cross_account(&role, "P", REGION, Ok(Some(producer)));
        snapshot.keep_cross_account(&role, "Gone", REGION, Ok(None));
        let denied = CrossAccountError::CannotAssume {
            role: role.clone(),
            account: "222222222222".into(),
            detail: "denied".into(),
        };
        snapshot.keep_cross_account(&role, "Denied", REGION, Err(denied.clone()));
        assert_eq!(
            cross_account_output(&snapshot, &role, "P", REGION, "O"),
            Lookup::Known(json!("theirs"))
        );
        assert_eq!(
            missing(cross_account_output(&snapshot, &role, "Gone", REGION, "O")),
            format!("stack Gone has no state in us-east-1 in the account of {role}; deploy it there first")
        );
        assert_eq!(
            missing(cross_account_output(
                &snapshot, &role, "Denied", REGION, "O"
            )),
            denied.to_string()
        );
        assert!(denied.to_string().starts_with("cannot assume"));
    }

    #[test]
    fn computed_reads_and_nested_stacks_need_every_record() {
        let literal = Template::parse(&json!({"Resources": {"R": {"Type": "AWS::SNS::Topic",
            "Properties": {"DisplayName": {"Fn::ImportValue": "Name"}}}}}))
        .unwrap();
        assert!(!needs_every_record(&literal));
        let computed = Template::parse(&json!({"Resources": {"R": {"Type": "AWS::SNS::Topic",
            "Properties": {"DisplayName": {"Fn::ImportValue": {"Fn::Sub": "${AWS::StackName}-x"}}}}}})).unwrap();
        assert!(needs_every_record(&computed));
        let nested = Template::parse(
            &json!({"Resources": {"Child": {"Type": "AWS::CloudFormation::Stack",
            "Properties": {"TemplateURL": "x"}}}}),
        )
        .unwrap();
        assert!(needs_every_record(&nested));
    }

    #[test]
    fn a_record_that_cannot_be_read_fails_its_lookups_closed() {
        let mut snapshot = StateSnapshot::default();
        snapshot.keep_cloudformation("Producer", REGION, outputs(&[("Out", "from-cfn")]));
        snapshot.keep_cloudformation_exports(REGION, [("Shared".to_string(), json!("cfn"))].into());
        snapshot.keep_unreadable("Producer", REGION, "written by a newer cdkd (schema 10)");
        let message = missing(lookup(&snapshot, "Producer", "Out"));
        assert!(
            message.contains("cannot read") && message.contains("schema 10"),
            "{message}"
        );
        let lookups = SnapshotLookups {
            snapshot: &snapshot,
            region: REGION,
        };
        let message = missing(lookups.import_value("Shared"));
        assert!(
            message.contains("Producer (written by a newer cdkd"),
            "{message}"
        );
    }

    #[test]
    fn state_answers_before_cloudformation() {
        let mut snapshot = StateSnapshot::default();
        let mut producer = StackState::new("Producer", REGION);
        producer.outputs.insert("Name".into(), json!("from-state"));
        snapshot.update(producer);
        snapshot.keep_cloudformation(
            "Producer",
            REGION,
            outputs(&[("Name", "from-cfn"), ("Other", "x")]),
        );
        assert_eq!(
            lookup(&snapshot, "Producer", "Name"),
            Lookup::Known(json!("from-state"))
        );
        // The record is authoritative: an output it lacks is not looked up in CloudFormation.
        assert_eq!(
            missing(lookup(&snapshot, "Producer", "Other")),
            "stack Producer (us-east-1) has no output Other"
        );
    }

    #[test]
    fn cloudformation_answers_a_producer_without_a_record() {
        let mut snapshot = StateSnapshot::default();
        snapshot.keep_cloudformation("Exported", REGION, outputs(&[("Name", "from-cfn")]));
        assert_eq!(
            lookup(&snapshot, "Exported", "Name"),
            Lookup::Known(json!("from-cfn"))
        );
        assert_eq!(
            missing(lookup(&snapshot, "Exported", "Nope")),
            "stack Exported (us-east-1) in CloudFormation has no output Nope"
        );
        // Another region's stack of the same name is another stack.
        let elsewhere = SnapshotLookups {
            snapshot: &snapshot,
            region: REGION,
        }
        .stack_output("Exported", "eu-west-1", "Name");
        assert_eq!(
            missing(elsewhere),
            "stack Exported has no state in eu-west-1; deploy it first"
        );
    }

    #[test]
    fn a_pending_producer_is_unknown_before_cloudformation_answers() {
        let mut snapshot = StateSnapshot::default();
        snapshot.keep_cloudformation("Producer", REGION, outputs(&[("Name", "from-cfn")]));
        snapshot.pending.insert("Producer".into());
        assert_eq!(lookup(&snapshot, "Producer", "Name"), Lookup::Unknown);
    }

    #[test]
    fn missing_messages_say_what_cloudformation_said() {
        let mut snapshot = StateSnapshot::default();
        assert_eq!(
            missing(lookup(&snapshot, "Never", "Name")),
            "stack Never has no state in us-east-1; deploy it first"
        );
        snapshot.keep_cloudformation("Gone", REGION, CloudFormationStack::Absent(None));
        assert_eq!(
            missing(lookup(&snapshot, "Gone", "Name")),
            "stack Gone has no state in us-east-1 (and CloudFormation has no stack of that name); deploy it first"
        );
        snapshot.keep_cloudformation(
            "Failed",
            REGION,
            CloudFormationStack::described("ROLLBACK_COMPLETE", BTreeMap::new()),
        );
        let failed = missing(lookup(&snapshot, "Failed", "Name"));
        assert!(
            failed.contains("has no state in us-east-1")
                && failed.contains("ROLLBACK_COMPLETE")
                && failed.ends_with("deploy it first"),
            "{failed}"
        );
        snapshot.keep_cloudformation(
            "Creating",
            REGION,
            CloudFormationStack::described("CREATE_IN_PROGRESS", BTreeMap::new()),
        );
        let creating = missing(lookup(&snapshot, "Creating", "Name"));
        assert!(
            creating.contains("Creating") && creating.contains("CREATE_IN_PROGRESS"),
            "{creating}"
        );
    }

    #[test]
    fn statuses_sort_into_absent_not_ready_and_usable() {
        let some = BTreeMap::from([("Name".to_string(), json!("v"))]);
        for absent in ["ROLLBACK_COMPLETE", "DELETE_COMPLETE", "DELETE_IN_PROGRESS"] {
            assert_eq!(
                CloudFormationStack::described(absent, some.clone()),
                CloudFormationStack::Absent(Some(absent.into()))
            );
        }
        for waiting in [
            "CREATE_IN_PROGRESS",
            "REVIEW_IN_PROGRESS",
            "IMPORT_IN_PROGRESS",
        ] {
            assert_eq!(
                CloudFormationStack::described(waiting, some.clone()),
                CloudFormationStack::NotReady(waiting.into())
            );
        }
        for usable in [
            "CREATE_COMPLETE",
            "UPDATE_COMPLETE",
            "UPDATE_IN_PROGRESS",
            "UPDATE_ROLLBACK_COMPLETE",
            "IMPORT_COMPLETE",
        ] {
            assert_eq!(
                CloudFormationStack::described(usable, some.clone()),
                CloudFormationStack::Outputs(some.clone())
            );
        }
    }

    #[tokio::test]
    async fn producers_without_a_record_are_read_from_cloudformation() {
        use crate::cloudformation::fake::FakeCloudFormation;
        let fake = std::sync::Arc::new(FakeCloudFormation::new(REGION, Default::default()));
        let producer = json!({"Resources": {"Q": {"Type": "AWS::SQS::Queue"}},
            "Outputs": {"Name": {"Value": {"Ref": "Q"}, "Export": {"Name": "QueueName"}}}});
        fake.put_stack(
            "Exported",
            "UPDATE_COMPLETE",
            &producer,
            &[("Q", "the-queue")],
            &[],
        );
        let consumer = Template::parse(&json!({"Resources": {"R": {"Type": "AWS::SNS::Topic",
            "Properties": {"DisplayName": {"Fn::Join": ["", [
                {"Fn::ImportValue": "QueueName"},
                {"Fn::GetStackOutput": {"StackName": "Exported", "OutputName": "Name"}},
                {"Fn::GetStackOutput": {"StackName": "Gone", "OutputName": "Name"}}]]}}}}}))
        .unwrap();
        let mut snapshot = StateSnapshot::default();
        let api: std::sync::Arc<dyn crate::cloudformation::CloudFormationApi> = fake.clone();
        let over = |region: &str| CloudFormation::over(api.clone(), region);
        (snapshot.read_cloudformation_over(over, [(&consumer, REGION)], &BTreeSet::new()))
            .await
            .unwrap();
        let outputs = BTreeMap::from([("Name".to_string(), json!("the-queue"))]);
        assert_eq!(
            snapshot.cloudformation("Exported", REGION),
            Some(&CloudFormationStack::Outputs(outputs))
        );
        assert_eq!(
            snapshot.cloudformation("Gone", REGION),
            Some(&CloudFormationStack::Absent(None))
        );
        assert_eq!(
            snapshot.cloudformation_export(REGION, "QueueName"),
            Some(&json!("the-queue"))
        );
    }

    #[test]
    fn only_a_missing_stack_error_counts_as_absent() {
        assert!(no_such_stack(
            Some("ValidationError"),
            Some("Stack with id Exported does not exist")
        ));
        assert!(!no_such_stack(Some("AccessDenied"), Some("not authorized")));
        assert!(!no_such_stack(Some("Throttling"), Some("Rate exceeded")));
        assert!(!no_such_stack(None, None));
    }

    #[test]
    fn candidates_are_literal_producers_without_a_record_outside_the_run() {
        let template = Template::parse(&json!({
            "Conditions": {"Use": {"Fn::Equals": [
                {"Fn::GetStackOutput": {"StackName": "InCondition", "OutputName": "Flag"}}, "yes"]}},
            "Resources": {"Reader": {"Type": "AWS::SNS::Topic", "Properties": {
                "DisplayName": {"Fn::Join": ["-", [
                    {"Fn::GetStackOutput": {"StackName": "Exported", "OutputName": "Name"}},
                    {"Fn::GetStackOutput": {"StackName": "Exported", "OutputName": "Other"}},
                    {"Fn::GetStackOutput": {"StackName": "Abroad", "Region": "eu-west-1", "OutputName": "Name"}},
                    {"Fn::GetStackOutput": {"StackName": "Here", "Region": {"Ref": "AWS::Region"}, "OutputName": "Name"}},
                    {"Fn::GetStackOutput": {"StackName": {"Ref": "Param"}, "OutputName": "Name"}},
                    {"Fn::GetStackOutput": {"StackName": "Recorded", "OutputName": "Name"}},
                    {"Fn::GetStackOutput": {"StackName": "Sibling", "OutputName": "Name"}},
                    {"Fn::GetStackOutput": {"StackName": "Diffed", "OutputName": "Name"}},
                    {"Fn::GetStackOutput": {"StackName": "Asked", "OutputName": "Name"}}
                ]]}}}},
            "Outputs": {"Out": {"Value": {"Fn::GetStackOutput": {"StackName": "InOutput", "OutputName": "Name"}}}}
        }))
        .unwrap();
        let mut snapshot = StateSnapshot::default();
        snapshot.update(StackState::new("Recorded", REGION));
        snapshot.pending.insert("Diffed".into());
        snapshot.keep_cloudformation("Asked", REGION, CloudFormationStack::Absent(None));
        let in_run = BTreeSet::from(["Sibling".to_string()]);
        let wanted = snapshot.cloudformation_candidates([(&template, REGION)], &in_run);
        let pair = |s: &str, r: &str| (s.to_string(), r.to_string());
        assert_eq!(
            wanted,
            BTreeSet::from([
                pair("Abroad", "eu-west-1"),
                pair("Exported", REGION),
                pair("Here", REGION),
                pair("InCondition", REGION),
                pair("InOutput", REGION),
            ])
        );
    }
}
