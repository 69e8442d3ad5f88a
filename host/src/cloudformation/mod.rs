//! CloudFormation, for the commands that meet it: `cdkd import --migrate-from-cloudformation`
//! (read a stack, then retire it), `cdkd export` (hand a stack over through IMPORT and UPDATE
//! change sets) and the deploy's check that a stack without cdkd state is not CloudFormation's.
//!
//! The seam is [`CloudFormationApi`]: one method per CloudFormation call cdkd makes, answered
//! in cdkd's own types. [`sdk::SdkCloudFormation`] is the AWS SDK behind it;
//! `fake::FakeCloudFormation` (tests only) keeps stacks and change sets in memory and answers
//! as CloudFormation does. [`CloudFormation`] holds the rules on top of the calls (what a
//! missing stack is, waiting for a status, change sets, the retire and the nesting flip), so
//! they run the same on either. Templates over CloudFormation's inline limit go through a
//! [`staging::TemplateStaging`] (the state bucket).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::aws_env::AwsEnvironment;

pub mod changeset;
#[cfg(test)]
pub(crate) mod fake;
pub mod nesting;
pub mod retire;
pub mod sdk;
pub mod staging;
#[cfg(test)]
mod tests;

pub use changeset::{Body, Outcome, ToImport};
pub use nesting::FLIP_TAG;
pub use staging::{BucketStaging, TemplateStaging};

/// The largest template `UpdateStack` and `CreateChangeSet` take inline, in bytes.
pub const INLINE_LIMIT: usize = 51_200;

/// CloudFormation's type of a nested stack.
pub const NESTED_STACK: &str = "AWS::CloudFormation::Stack";

/// Stack statuses a stack can be migrated from, or an interrupted export taken up again in:
/// settled, and not being rolled back or deleted.
pub const SETTLED: &[&str] = &[
    "CREATE_COMPLETE",
    "UPDATE_COMPLETE",
    "UPDATE_ROLLBACK_COMPLETE",
    "IMPORT_COMPLETE",
    "IMPORT_ROLLBACK_COMPLETE",
];

/// A failed CloudFormation call, in the forms cdkd's messages quote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallError {
    /// CloudFormation's error code, when it answered (`ValidationError`, ...).
    pub code: Option<String>,
    /// CloudFormation's message, when it answered with one.
    pub message: Option<String>,
    /// One line: `Code: message (HTTP status)`, or the chain of causes when it did not answer.
    pub line: String,
    /// Every cause, as the SDK's `DisplayErrorContext` writes them.
    pub context: String,
    /// The SDK error's own short text (`service error`, `dispatch failure`, ...).
    pub summary: String,
}

impl CallError {
    /// An error CloudFormation answered with `code` and `message` (all three forms the same).
    pub fn service(code: &str, message: &str) -> CallError {
        let text = format!("{code}: {message}");
        CallError {
            code: Some(code.to_string()),
            message: Some(message.to_string()),
            line: text.clone(),
            context: text.clone(),
            summary: text,
        }
    }

    /// Whether it says there is no such stack (`ValidationError` "Stack with id X does not
    /// exist").
    pub fn no_such_stack(&self) -> bool {
        self.context.contains("does not exist")
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.summary)
    }
}

/// What `DescribeStacks` says of one stack.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StackDescription {
    /// Its ARN.
    pub stack_id: String,
    /// Its status.
    pub status: String,
    /// Why it is in that status, when CloudFormation says.
    pub status_reason: Option<String>,
    /// The stack it is nested in, if any.
    pub parent_id: Option<String>,
    /// Its tags, in CloudFormation's order.
    pub tags: Vec<(String, String)>,
    /// Its parameters: key and value (`****` for `NoEcho`), in CloudFormation's order.
    pub parameters: Vec<(String, Option<String>)>,
    /// Its outputs: key and value.
    pub outputs: Vec<(String, Option<String>)>,
}

/// Which of a stack's templates `GetTemplate` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TemplateStage {
    /// As it was given.
    Original,
    /// With its transforms applied (what nesting the stack must match).
    Processed,
}

/// Where an update's or a change set's template comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateSource {
    /// Inline (at most [`INLINE_LIMIT`] bytes).
    Body(String),
    /// A URL CloudFormation reads it from (a transient upload).
    Url(String),
    /// The stack's current template.
    Previous,
}

/// An `UpdateStack`: every parameter keeps its previous value, and the update may create IAM
/// resources and expand macros.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackUpdate {
    /// The stack.
    pub stack: String,
    /// Its new template.
    pub template: TemplateSource,
    /// The parameter keys, each passed with `UsePreviousValue`.
    pub previous_parameters: Vec<String>,
    /// Its new tags (`None`: as they are).
    pub tags: Option<Vec<(String, String)>>,
}

/// The kind of a change set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeSetKind {
    /// Adopts existing resources (into a new stack, or an existing one).
    Import,
    /// Updates an existing stack.
    Update,
}

impl ChangeSetKind {
    /// CloudFormation's name of it.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeSetKind::Import => "IMPORT",
            ChangeSetKind::Update => "UPDATE",
        }
    }
}

/// A `CreateChangeSet`, with IAM and macro capabilities.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeSetRequest {
    /// The stack.
    pub stack: String,
    /// The change set's name.
    pub name: String,
    /// Its kind.
    pub kind: ChangeSetKind,
    /// The template.
    pub template: TemplateSource,
    /// Parameter values by key.
    pub parameters: BTreeMap<String, String>,
    /// The resources an IMPORT adopts (`None` for an UPDATE).
    pub resources_to_import: Option<Vec<ToImport>>,
}

/// What `DescribeChangeSet` says of a change set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeSetState {
    /// `CREATE_PENDING`, `CREATE_IN_PROGRESS`, `CREATE_COMPLETE`, `FAILED`, ...
    pub status: String,
    /// Why, when it failed.
    pub status_reason: Option<String>,
}

/// One event of a stack, as `DescribeStackEvents` answers it (newest first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackEvent {
    /// The logical id (the stack's own name for the stack's events).
    pub logical_id: String,
    /// The resource's type.
    pub resource_type: String,
    /// Its status then.
    pub status: String,
    /// Why, when CloudFormation says.
    pub reason: Option<String>,
}

/// The CloudFormation calls cdkd makes, one method each, for one region.
#[async_trait]
pub trait CloudFormationApi: Send + Sync {
    /// `DescribeStacks` of one stack: `Ok(None)` when the answer lists none; a stack that does
    /// not exist is an error, as CloudFormation answers it ([`CallError::no_such_stack`]).
    async fn describe_stack(&self, stack: &str) -> Result<Option<StackDescription>, CallError>;

    /// `ListStackResources`, every page: the resources with a logical id and a type.
    async fn list_stack_resources(&self, stack: &str) -> Result<Vec<StackResource>, CallError>;

    /// `GetTemplate`: the body of the stack's template at `stage`.
    async fn get_template(
        &self,
        stack: &str,
        stage: TemplateStage,
    ) -> Result<Option<String>, CallError>;

    /// `UpdateStack`.
    async fn update_stack(&self, update: &StackUpdate) -> Result<(), CallError>;

    /// `DeleteStack`.
    async fn delete_stack(&self, stack: &str) -> Result<(), CallError>;

    /// `CreateChangeSet`.
    async fn create_change_set(&self, request: &ChangeSetRequest) -> Result<(), CallError>;

    /// `DescribeChangeSet`.
    async fn describe_change_set(
        &self,
        stack: &str,
        name: &str,
    ) -> Result<ChangeSetState, CallError>;

    /// `ExecuteChangeSet`.
    async fn execute_change_set(&self, stack: &str, name: &str) -> Result<(), CallError>;

    /// `DescribeStackEvents`, its first page (the newest events).
    async fn describe_stack_events(&self, stack: &str) -> Result<Vec<StackEvent>, CallError>;

    /// `ListExports`, every page: export name → value.
    async fn list_exports(&self) -> Result<BTreeMap<String, String>, CallError>;
}

/// A CloudFormation stack as `DescribeStacks` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    /// Its ARN.
    pub stack_id: String,
    /// Its status.
    pub status: String,
    /// Why it is in that status, when CloudFormation says.
    pub status_reason: Option<String>,
    /// The stack it is nested in, if any.
    pub parent_id: Option<String>,
    /// Its tags, in CloudFormation's order.
    pub tags: Vec<(String, String)>,
    /// Its parameter keys.
    pub parameters: Vec<String>,
}

impl Described {
    /// Whether the stack is settled: not in progress, failed, rolled back or deleted.
    pub fn settled(&self) -> bool {
        SETTLED.contains(&self.status.as_str())
    }
}

/// One resource of a CloudFormation stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackResource {
    /// Its logical id.
    pub logical_id: String,
    /// Its type.
    pub resource_type: String,
    /// CloudFormation's physical id (absent for some types).
    pub physical_id: Option<String>,
}

/// CloudFormation in one region: its calls, with cdkd's rules on top.
#[derive(Clone)]
pub struct CloudFormation {
    api: Arc<dyn CloudFormationApi>,
    region: String,
}

/// A failed call as cdkd reports it: `CloudFormation <what>: <why>`.
pub(crate) fn failed(what: &str, err: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("CloudFormation {what}: {err}")
}

impl CloudFormation {
    /// CloudFormation in `region`, through the AWS SDK.
    pub fn new(aws: &AwsEnvironment, region: &str) -> CloudFormation {
        CloudFormation::over(Arc::new(sdk::SdkCloudFormation::new(aws, region)), region)
    }

    /// CloudFormation in `region`, through `api`.
    pub fn over(api: Arc<dyn CloudFormationApi>, region: &str) -> CloudFormation {
        CloudFormation {
            api,
            region: region.to_string(),
        }
    }

    /// The region.
    pub fn region(&self) -> &str {
        &self.region
    }

    /// The stack, `None` when there is none of that name.
    pub async fn describe(&self, stack: &str) -> anyhow::Result<Option<Described>> {
        match self.api.describe_stack(stack).await {
            Ok(answer) => Ok(answer.map(|s| Described {
                stack_id: s.stack_id,
                status: s.status,
                status_reason: s.status_reason,
                parent_id: s.parent_id,
                tags: s.tags,
                parameters: s.parameters.into_iter().map(|(key, _)| key).collect(),
            })),
            Err(err) if err.no_such_stack() => Ok(None),
            Err(err) => Err(failed(&format!("DescribeStacks {stack}"), err.context)),
        }
    }

    /// The resources of a settled stack.
    pub async fn resources(&self, stack: &str) -> anyhow::Result<Vec<StackResource>> {
        match self.describe(stack).await? {
            None => anyhow::bail!(
                "there is no CloudFormation stack {stack} in {}; name the stack to migrate with --migrate-from-cloudformation NAME",
                self.region
            ),
            Some(described) if !described.settled() => anyhow::bail!(
                "CloudFormation stack {stack} is {}; migrate it once it is one of {}",
                described.status,
                SETTLED.join(", ")
            ),
            Some(_) => self.stack_resources(stack).await,
        }
    }

    /// Every resource of the stack, whatever its status: `ListStackResources`, page by page
    /// (`DescribeStackResources` answers only the first 100).
    pub async fn stack_resources(&self, stack: &str) -> anyhow::Result<Vec<StackResource>> {
        (self.api.list_stack_resources(stack).await)
            .map_err(|err| failed(&format!("ListStackResources {stack}"), err.line))
    }

    /// The logical ids the stack holds, with their physical ids.
    pub async fn held(&self, stack: &str) -> anyhow::Result<BTreeMap<String, Option<String>>> {
        let resources = self.stack_resources(stack).await?;
        Ok(resources
            .into_iter()
            .map(|r| (r.logical_id, r.physical_id))
            .collect())
    }

    /// The stack's parameter values and outputs, by name (CloudFormation reports them as
    /// strings; `NoEcho` parameters as `****`).
    pub async fn values(
        &self,
        stack: &str,
    ) -> anyhow::Result<(BTreeMap<String, Value>, Map<String, Value>)> {
        let answer = (self.api.describe_stack(stack).await)
            .map_err(|err| failed(&format!("DescribeStacks {stack}"), err))?;
        let Some(described) = answer else {
            return Ok(Default::default());
        };
        Ok((by_name(described.parameters), by_name(described.outputs)))
    }

    /// CloudFormation's exports in the region: name → value.
    pub async fn exports(&self) -> Result<BTreeMap<String, String>, CallError> {
        self.api.list_exports().await
    }

    /// `DescribeStacks` of one stack as CloudFormation answers it (a missing stack is an
    /// error, [`CallError::no_such_stack`]), for callers with their own messages.
    pub async fn describe_stack(&self, stack: &str) -> Result<Option<StackDescription>, CallError> {
        self.api.describe_stack(stack).await
    }

    /// Polls until the stack reaches `done` (gone counts as deleted), or fails naming why.
    pub async fn wait(&self, stack: &str, done: &str) -> anyhow::Result<()> {
        let started = Instant::now();
        let mut delay = Duration::from_millis(100);
        loop {
            match self
                .describe(stack)
                .await?
                .map(|d| (d.status, d.status_reason))
            {
                None if done == "DELETE_COMPLETE" => return Ok(()),
                Some((status, _)) if status == done => return Ok(()),
                Some((status, reason))
                    if status.ends_with("_FAILED")
                        || status.ends_with("ROLLBACK_COMPLETE")
                        || (status.ends_with("_COMPLETE") && status != done) =>
                {
                    anyhow::bail!(
                        "CloudFormation stack {stack} ended {status}{}",
                        reason.map(|r| format!(": {r}")).unwrap_or_default()
                    )
                }
                _ => {}
            }
            if started.elapsed() > Duration::from_secs(30 * 60) {
                anyhow::bail!(
                    "CloudFormation stack {stack} did not reach {done} within 30 minutes"
                );
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
    }
}

/// `(name, value)` pairs CloudFormation reports as a map of strings (incomplete ones left out).
fn by_name<C: FromIterator<(String, Value)>>(pairs: Vec<(String, Option<String>)>) -> C {
    pairs
        .into_iter()
        .filter_map(|(name, value)| Some((name, Value::String(value?))))
        .collect()
}

/// The logical ids of a template's nested stacks.
pub fn nested_stacks(template: &Value) -> Vec<String> {
    template
        .get("Resources")
        .and_then(Value::as_object)
        .map(|resources| {
            resources
                .iter()
                .filter(|(_, r)| r.get("Type").and_then(Value::as_str) == Some(NESTED_STACK))
                .map(|(id, _)| id.clone())
                .collect()
        })
        .unwrap_or_default()
}
