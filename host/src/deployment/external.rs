//! Values from other stacks' state records: `Fn::ImportValue` (through `exportNames`) and
//! `Fn::GetStackOutput`, for planning and deploying.
//!
//! A `Fn::GetStackOutput` producer that cdkd has no record of (e.g. one `cdkd export` handed to
//! CloudFormation) and that this run does not deploy is read from CloudFormation instead:
//! [`StateSnapshot::read_cloudformation`] asks `DescribeStacks` once per (stack, region) before
//! the run, since lookups are synchronous. The reference stays weak: nothing locks the
//! CloudFormation stack's output.

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_cloudformation::error::{DisplayErrorContext, ProvideErrorMetadata};
use serde_json::Value;

use crate::analyzer::intrinsics::Lookup;
use crate::analyzer::plan::ExternalValues;
use crate::analyzer::template::Template;
use crate::aws_env::AwsEnvironment;
use crate::state::backend::StateBackend;
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
                if let Some(Value::Object(read)) = map.get("Fn::GetStackOutput") {
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

/// Reads one stack from CloudFormation.
async fn describe(
    client: &aws_sdk_cloudformation::Client,
    stack: &str,
    region: &str,
) -> anyhow::Result<CloudFormationStack> {
    match client.describe_stacks().stack_name(stack).send().await {
        Ok(answer) => Ok(match answer.stacks().first() {
            None => CloudFormationStack::Absent(None),
            Some(described) => {
                let outputs = described
                    .outputs()
                    .iter()
                    .filter_map(|o| {
                        Some((
                            o.output_key()?.to_string(),
                            Value::String(o.output_value()?.to_string()),
                        ))
                    })
                    .collect();
                let status = described.stack_status().map_or("", |s| s.as_str());
                CloudFormationStack::described(status, outputs)
            }
        }),
        Err(err) if no_such_stack(err.code(), err.message()) => {
            Ok(CloudFormationStack::Absent(None))
        }
        Err(err) => {
            // A service error by its code and message; anything else (a timeout, no
            // connection) with its whole chain of causes.
            let reason = match (err.code(), err.message()) {
                (Some(code), Some(message)) => format!("{code}: {message}"),
                (Some(code), None) => code.to_string(),
                _ => DisplayErrorContext(&err).to_string(),
            };
            Err(anyhow::anyhow!(
                "reading the outputs of stack {stack} ({region}) from CloudFormation failed (cdkd has no state for it, and Fn::GetStackOutput reads it): DescribeStacks: {reason}; fix the access, or pass --no-cfn-fallback to read cdkd state only"
            ))
        }
    }
}

impl StateSnapshot {
    /// Reads every record, all at once (cross-stack lookups are rare enough that one scan per
    /// run is fine).
    pub async fn load(backend: &StateBackend) -> Result<StateSnapshot, StateError> {
        let mut records = BTreeMap::new();
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
                    tracing::warn!("skipping the record of stack {stack} ({region}): {err}")
                }
                Err(err) => return Err(err),
            }
        }
        Ok(StateSnapshot {
            records,
            pending: BTreeSet::new(),
            secret_outputs: BTreeMap::new(),
            cloudformation: BTreeMap::new(),
        })
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
        let wanted = self.cloudformation_candidates(consumers, in_run);
        if wanted.is_empty() {
            return Ok(());
        }
        let clients: BTreeMap<&str, aws_sdk_cloudformation::Client> = wanted
            .iter()
            .map(|(_, region)| {
                let config = aws_sdk_cloudformation::config::Builder::from(aws.sdk_config())
                    .region(aws_sdk_cloudformation::config::Region::new(region.clone()))
                    .build();
                (
                    region.as_str(),
                    aws_sdk_cloudformation::Client::from_conf(config),
                )
            })
            .collect();
        let reads = wanted.iter().map(|(stack, region)| {
            let client = &clients[region.as_str()];
            async move { (stack, region, describe(client, stack, region).await) }
        });
        let mut failures = Vec::new();
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

    /// Replaces (or adds) one record, e.g. a producer deployed earlier in the same run.
    pub fn update(&mut self, state: StackState) {
        let region = state.region.clone().unwrap_or_default();
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

    /// The producer of an export in `region`, and its value.
    pub fn export(&self, region: &str, name: &str) -> Option<(&str, &Value)> {
        self.records
            .iter()
            .filter(|((_, r), _)| r == region)
            .find_map(|((stack, _), state)| {
                state
                    .importable_output_keys()
                    .contains(&name)
                    .then(|| (stack.as_str(), &state.outputs[name]))
            })
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

/// The lookups of one consumer stack (its region) over a snapshot.
pub struct SnapshotLookups<'a> {
    /// The snapshot.
    pub snapshot: &'a StateSnapshot,
    /// The consumer's region.
    pub region: &'a str,
}

impl ExternalValues for SnapshotLookups<'_> {
    fn import_value(&self, export_name: &str) -> Lookup {
        match self.snapshot.export(self.region, export_name) {
            Some((_, value)) => Lookup::Known(value.clone()),
            None if !self.snapshot.pending.is_empty() => Lookup::Unknown,
            None => Lookup::Missing(format!(
                "no deployed stack in {} exports {export_name}; deploy the producer first",
                self.region
            )),
        }
    }

    fn stack_output(&self, stack: &str, region: &str, output: &str) -> Lookup {
        match self.snapshot.record(stack, region) {
            Some(state) => match state.outputs.get(output) {
                Some(value) => Lookup::Known(value.clone()),
                None if self.snapshot.pending.contains(stack) => Lookup::Unknown,
                None => Lookup::Missing(format!("stack {stack} ({region}) has no output {output}")),
            },
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
