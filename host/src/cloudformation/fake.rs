//! CloudFormation in memory, for unit tests: stacks and change sets in maps, answering the
//! calls of [`CloudFormationApi`] as CloudFormation (and the test emulator's
//! tests/emulator/cfn_import.py) does. A stack that does not exist is a `ValidationError`;
//! an IMPORT change set makes a new stack `REVIEW_IN_PROGRESS`, and FAILS (with AWS's reason)
//! when a resource to import does not exist, another stack holds it, or a stack to nest is
//! `IMPORT_COMPLETE` or nested already; executing it adopts the resources (`IMPORT_COMPLETE`),
//! or, for a resource told to fail, writes `IMPORT_FAILED` and rolls back
//! (`IMPORT_ROLLBACK_COMPLETE`). An UPDATE change set with nothing to change FAILS with "didn't
//! contain changes"; executed, it creates the template's new resources and removes the old
//! (`UPDATE_COMPLETE`, or `UPDATE_ROLLBACK_COMPLETE` when one is told to fail). A stack's
//! status settles one `DescribeStacks` after the call that started it, so the waits poll.
//! Deleting a stack deletes its resources but those with `DeletionPolicy: Retain`, and its
//! nested stacks.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;

use super::staging::{Staged, TemplateStaging};
use super::{
    CallError, ChangeSetKind, ChangeSetRequest, ChangeSetState, CloudFormationApi,
    StackDescription, StackEvent, StackResource, StackUpdate, TemplateSource, TemplateStage,
    ToImport, NESTED_STACK,
};

fn guard<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// A stack the fake holds.
#[derive(Debug, Clone, Default)]
pub struct FakeStack {
    /// Its ARN.
    pub stack_id: String,
    /// Its status as `DescribeStacks` answers it now.
    pub status: String,
    /// The status it settles in at the next `DescribeStacks`.
    pub settles: Option<String>,
    /// Why it is in that status.
    pub status_reason: Option<String>,
    /// The stack it is nested in.
    pub parent_id: Option<String>,
    /// Its tags.
    pub tags: Vec<(String, String)>,
    /// Its parameter values.
    pub parameters: BTreeMap<String, String>,
    /// Its template's text.
    pub template: String,
    /// Its resources: logical id → (type, physical id).
    pub resources: BTreeMap<String, (String, String)>,
    /// Its events, oldest first.
    pub events: Vec<StackEvent>,
}

impl FakeStack {
    fn template(&self) -> Value {
        parse(&self.template)
    }

    fn event(&mut self, logical_id: &str, resource_type: &str, status: &str, reason: Option<&str>) {
        self.events.push(StackEvent {
            logical_id: logical_id.to_string(),
            resource_type: resource_type.to_string(),
            status: status.to_string(),
            reason: reason.map(str::to_string),
        });
    }

    /// Settles now in `status` (one `DescribeStacks` later), with a stack event.
    fn settle(&mut self, name: &str, progress: &str, status: &str) {
        self.status = progress.to_string();
        self.settles = Some(status.to_string());
        self.event(name, NESTED_STACK, progress, None);
        self.event(name, NESTED_STACK, status, None);
    }
}

#[derive(Debug, Clone)]
struct FakeChangeSet {
    kind: ChangeSetKind,
    status: String,
    reason: Option<String>,
    template: String,
    parameters: BTreeMap<String, String>,
    to_import: Vec<ToImport>,
}

#[derive(Default)]
struct Account {
    next: u32,
    stacks: BTreeMap<String, FakeStack>,
    change_sets: BTreeMap<(String, String), FakeChangeSet>,
    /// AWS resources outside CloudFormation's stacks, by identifier value: what an IMPORT
    /// finds.
    existing: BTreeSet<String>,
    /// Logical ids whose import or create fails at execution, with the reason.
    failing: BTreeMap<String, String>,
    /// Physical ids CloudFormation deleted.
    deleted: Vec<String>,
    calls: Vec<String>,
}

/// CloudFormation in maps, for one account and region. Every call is logged as
/// `"{Action} {stack}"`.
pub struct FakeCloudFormation {
    account: Mutex<Account>,
    staging: Arc<FakeStaging>,
    region: String,
}

/// A stack's ARN in the fake's account.
fn arn(region: &str, name: &str, n: u32) -> String {
    format!("arn:aws:cloudformation:{region}:123456789012:stack/{name}/fake-{n}")
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text)
        .or_else(|_| serde_yaml::from_str(text))
        .unwrap_or(Value::Null)
}

fn missing(stack: &str) -> CallError {
    CallError::service(
        "ValidationError",
        &format!("Stack with id {stack} does not exist"),
    )
}

/// The value of an `Output` the fake can resolve: a literal, or the `Ref` of a resource.
fn resolve(value: &Value, resources: &BTreeMap<String, (String, String)>) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Object(map) => match map.get("Ref").and_then(Value::as_str) {
            Some(id) => resources.get(id).map(|(_, physical)| physical.clone()),
            None => None,
        },
        _ => None,
    }
}

impl FakeCloudFormation {
    /// An empty account in `region`, its uploads in `staging`.
    pub fn new(region: &str, staging: Arc<FakeStaging>) -> FakeCloudFormation {
        FakeCloudFormation {
            account: Mutex::default(),
            staging,
            region: region.to_string(),
        }
    }

    /// Makes an AWS resource exist outside any stack, by its identifier value.
    pub fn exists(&self, identifier: &str) {
        guard(&self.account).existing.insert(identifier.to_string());
    }

    /// Makes the import or create of `logical_id` fail at execution with `reason`.
    pub fn fail(&self, logical_id: &str, reason: &str) {
        (guard(&self.account).failing).insert(logical_id.to_string(), reason.to_string());
    }

    /// Lets `logical_id` succeed again.
    pub fn heal(&self, logical_id: &str) {
        guard(&self.account).failing.remove(logical_id);
    }

    /// Puts a settled stack: its template's resources get the physical ids given (or made up).
    pub fn put_stack(
        &self,
        name: &str,
        status: &str,
        template: &Value,
        physical_ids: &[(&str, &str)],
        parameters: &[(&str, &str)],
    ) -> String {
        let mut account = guard(&self.account);
        account.next += 1;
        let stack_id = arn(&self.region, name, account.next);
        let given: BTreeMap<&str, &str> = physical_ids.iter().copied().collect();
        let resources = (template["Resources"].as_object().into_iter().flatten())
            .map(|(id, resource)| {
                let kind = resource["Type"].as_str().unwrap_or_default().to_string();
                let physical = given
                    .get(id.as_str())
                    .map_or_else(|| format!("{id}-cfn"), |p| p.to_string());
                (id.clone(), (kind, physical))
            })
            .collect();
        let stack = FakeStack {
            stack_id: stack_id.clone(),
            status: status.to_string(),
            template: template.to_string(),
            parameters: (parameters.iter())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            resources,
            ..FakeStack::default()
        };
        account.stacks.insert(name.to_string(), stack);
        stack_id
    }

    /// The stack of that name, as it is now.
    pub fn stack(&self, name: &str) -> Option<FakeStack> {
        guard(&self.account).stacks.get(name).cloned()
    }

    /// Changes a stack in place.
    pub fn edit(&self, name: &str, change: impl FnOnce(&mut FakeStack)) {
        change(guard(&self.account).stacks.get_mut(name).expect("a stack"));
    }

    /// The physical ids CloudFormation deleted.
    pub fn deleted(&self) -> Vec<String> {
        guard(&self.account).deleted.clone()
    }

    /// The calls made, in order.
    pub fn calls(&self) -> Vec<String> {
        guard(&self.account).calls.clone()
    }

    fn log(&self, account: &mut Account, call: String) {
        account.calls.push(call);
    }

    /// The stack's name, for a name or a stack id (CloudFormation takes either).
    fn named(account: &Account, stack: &str) -> String {
        (account.stacks.iter())
            .find(|(_, s)| s.stack_id == stack)
            .map_or_else(|| stack.to_string(), |(name, _)| name.clone())
    }

    /// The template text a request names: inline, or an upload of the staging.
    fn template_of(&self, source: &TemplateSource, current: &str) -> Result<String, CallError> {
        match source {
            TemplateSource::Body(body) => Ok(body.clone()),
            TemplateSource::Previous => Ok(current.to_string()),
            TemplateSource::Url(url) => self.staging.read(url).ok_or_else(|| {
                CallError::service(
                    "ValidationError",
                    "S3 error: The specified key does not exist.",
                )
            }),
        }
    }

    /// Why an IMPORT of `entry` into `into` fails (AWS's words), if it does.
    fn import_refusal(account: &Account, into: &str, entry: &ToImport) -> Option<String> {
        let value = entry.identifier.values().next().and_then(Value::as_str)?;
        if entry.resource_type == NESTED_STACK {
            let Some((_, child)) = account.stacks.iter().find(|(_, s)| s.stack_id == value) else {
                return Some(format!("Stack with id {value} does not exist"));
            };
            if let Some(parent) = &child.parent_id {
                return Some(format!("{value} already exists in stack {parent}"));
            }
            if child.status == "IMPORT_COMPLETE" {
                return Some(format!("Stack {value} is not in an importable status, current stack status is IMPORT_COMPLETE."));
            }
            return None;
        }
        let holder = (account.stacks.iter())
            .filter(|(name, _)| name.as_str() != into)
            .find(|(_, s)| s.resources.values().any(|(_, p)| p == value));
        if let Some((_, holder)) = holder {
            return Some(format!(
                "{value} already exists in stack {}",
                holder.stack_id
            ));
        }
        if !account.existing.contains(value) {
            return Some(format!(
                "Resource of type '{}' with identifier '{value}' was not found.",
                entry.resource_type
            ));
        }
        None
    }

    fn delete_stack_in(account: &mut Account, name: &str) {
        let Some(mut stack) = account.stacks.remove(name) else {
            return;
        };
        let template = stack.template();
        for (logical_id, (kind, physical)) in std::mem::take(&mut stack.resources) {
            if kind == NESTED_STACK {
                let child = (account.stacks.iter())
                    .find(|(_, s)| s.stack_id == physical)
                    .map(|(n, _)| n.clone());
                if let Some(child) = child {
                    FakeCloudFormation::delete_stack_in(account, &child);
                }
                continue;
            }
            let retained = template["Resources"][&logical_id]["DeletionPolicy"] == "Retain";
            if !retained {
                account.existing.remove(&physical);
                account.deleted.push(physical);
            } else {
                account.existing.insert(physical);
            }
        }
    }
}

#[async_trait]
impl CloudFormationApi for FakeCloudFormation {
    async fn describe_stack(&self, stack: &str) -> Result<Option<StackDescription>, CallError> {
        let mut account = guard(&self.account);
        let stack = &FakeCloudFormation::named(&account, stack);
        self.log(&mut account, format!("DescribeStacks {stack}"));
        let Some(found) = account.stacks.get_mut(stack) else {
            return Err(missing(stack));
        };
        let answer = StackDescription {
            stack_id: found.stack_id.clone(),
            status: found.status.clone(),
            status_reason: found.status_reason.clone(),
            parent_id: found.parent_id.clone(),
            tags: found.tags.clone(),
            parameters: (found.parameters.iter())
                .map(|(k, v)| (k.clone(), Some(v.clone())))
                .collect(),
            outputs: (found.template()["Outputs"]
                .as_object()
                .into_iter()
                .flatten())
            .map(|(key, output)| (key.clone(), resolve(&output["Value"], &found.resources)))
            .collect(),
        };
        match found.settles.take().as_deref() {
            Some("DELETE_COMPLETE") => {
                account.stacks.remove(stack);
            }
            Some(status) => found.status = status.to_string(),
            None => {}
        }
        Ok(Some(answer))
    }

    async fn list_stack_resources(&self, stack: &str) -> Result<Vec<StackResource>, CallError> {
        let mut account = guard(&self.account);
        let stack = &FakeCloudFormation::named(&account, stack);
        self.log(&mut account, format!("ListStackResources {stack}"));
        let found = account.stacks.get(stack).ok_or_else(|| missing(stack))?;
        Ok((found.resources.iter())
            .map(|(logical_id, (kind, physical))| StackResource {
                logical_id: logical_id.clone(),
                resource_type: kind.clone(),
                physical_id: Some(physical.clone()),
            })
            .collect())
    }

    async fn get_template(
        &self,
        stack: &str,
        _stage: TemplateStage,
    ) -> Result<Option<String>, CallError> {
        let mut account = guard(&self.account);
        let stack = &FakeCloudFormation::named(&account, stack);
        self.log(&mut account, format!("GetTemplate {stack}"));
        let found = account.stacks.get(stack).ok_or_else(|| missing(stack))?;
        Ok(Some(found.template.clone()))
    }

    async fn update_stack(&self, update: &StackUpdate) -> Result<(), CallError> {
        let mut account = guard(&self.account);
        let name = &FakeCloudFormation::named(&account, &update.stack);
        self.log(&mut account, format!("UpdateStack {name}"));
        let found = account.stacks.get(name).ok_or_else(|| missing(name))?;
        if !super::SETTLED.contains(&found.status.as_str()) {
            return Err(CallError::service(
                "ValidationError",
                &format!(
                    "Stack:{} is in {} state and can not be updated.",
                    found.stack_id, found.status
                ),
            ));
        }
        let template = self.template_of(&update.template, &found.template)?;
        let tags = update.tags.clone().unwrap_or_else(|| found.tags.clone());
        if parse(&template) == found.template() && tags == found.tags {
            return Err(CallError::service(
                "ValidationError",
                "No updates are to be performed.",
            ));
        }
        // A nested stack's new template (TemplateURL) updates that stack, as on AWS.
        let nested: Vec<(String, String)> = (parse(&template)["Resources"].as_object())
            .into_iter()
            .flatten()
            .filter_map(|(id, resource)| {
                let url = resource["Properties"]["TemplateURL"].as_str()?;
                let (_, child) = found.resources.get(id)?;
                Some((child.clone(), self.staging.read(url)?))
            })
            .collect();
        for (child, body) in nested {
            let child = FakeCloudFormation::named(&account, &child);
            if let Some(child) = account.stacks.get_mut(&child) {
                child.template = body;
            }
        }
        let found = account.stacks.get_mut(name).expect("the stack");
        found.template = template;
        found.tags = tags;
        found.settle(name, "UPDATE_IN_PROGRESS", "UPDATE_COMPLETE");
        Ok(())
    }

    async fn delete_stack(&self, stack: &str) -> Result<(), CallError> {
        let mut account = guard(&self.account);
        let stack = &FakeCloudFormation::named(&account, stack);
        self.log(&mut account, format!("DeleteStack {stack}"));
        // CloudFormation answers a delete of no stack with success.
        if let Some(found) = account.stacks.get(stack).cloned() {
            FakeCloudFormation::delete_stack_in(&mut account, stack);
            let mut gone = found;
            gone.resources.clear();
            gone.settle(stack, "DELETE_IN_PROGRESS", "DELETE_COMPLETE");
            account.stacks.insert(stack.to_string(), gone);
        }
        Ok(())
    }

    async fn create_change_set(&self, request: &ChangeSetRequest) -> Result<(), CallError> {
        let mut account = guard(&self.account);
        let name = &request.stack;
        self.log(
            &mut account,
            format!("CreateChangeSet {} {name}", request.kind.as_str()),
        );
        let current = account.stacks.get(name).cloned();
        let template = self.template_of(
            &request.template,
            current.as_ref().map_or("", |s| &s.template),
        )?;
        let mut change_set = FakeChangeSet {
            kind: request.kind,
            status: "CREATE_IN_PROGRESS".into(),
            reason: None,
            template,
            parameters: request.parameters.clone(),
            to_import: request.resources_to_import.clone().unwrap_or_default(),
        };
        match request.kind {
            ChangeSetKind::Import => {
                if change_set.to_import.is_empty() {
                    return Err(CallError::service(
                        "ValidationError",
                        "ResourcesToImport must be specified for an IMPORT change set.",
                    ));
                }
                if current.is_none() {
                    account.next += 1;
                    let mut stack = FakeStack {
                        stack_id: arn(&self.region, name, account.next),
                        status: "REVIEW_IN_PROGRESS".into(),
                        template: "{}".into(),
                        ..FakeStack::default()
                    };
                    stack.event(name, NESTED_STACK, "REVIEW_IN_PROGRESS", None);
                    account.stacks.insert(name.clone(), stack);
                }
                let refusal = (change_set.to_import.iter())
                    .find_map(|entry| FakeCloudFormation::import_refusal(&account, name, entry));
                if let Some(reason) = refusal {
                    change_set.reason = Some(reason);
                }
            }
            ChangeSetKind::Update => {
                let current = current.ok_or_else(|| missing(name))?;
                if parse(&change_set.template) == current.template()
                    && change_set.parameters == current.parameters
                {
                    change_set.reason = Some("The submitted information didn't contain changes. Submit different information to create a change set.".into());
                }
            }
        }
        account
            .change_sets
            .insert((name.clone(), request.name.clone()), change_set);
        Ok(())
    }

    async fn describe_change_set(
        &self,
        stack: &str,
        name: &str,
    ) -> Result<ChangeSetState, CallError> {
        let mut account = guard(&self.account);
        self.log(&mut account, format!("DescribeChangeSet {stack}"));
        let Some(change_set) = account
            .change_sets
            .get_mut(&(stack.to_string(), name.to_string()))
        else {
            return Err(CallError::service(
                "ChangeSetNotFound",
                &format!("ChangeSet [{name}] does not exist"),
            ));
        };
        let answer = ChangeSetState {
            status: change_set.status.clone(),
            status_reason: change_set.reason.clone(),
        };
        // Created at the second look: the wait polls once.
        if change_set.status == "CREATE_IN_PROGRESS" {
            change_set.status = match change_set.reason {
                Some(_) => "FAILED".into(),
                None => "CREATE_COMPLETE".into(),
            };
        }
        Ok(answer)
    }

    async fn execute_change_set(&self, stack: &str, name: &str) -> Result<(), CallError> {
        let mut account = guard(&self.account);
        self.log(&mut account, format!("ExecuteChangeSet {stack}"));
        let key = (stack.to_string(), name.to_string());
        let Some(change_set) = account.change_sets.get(&key).cloned() else {
            return Err(CallError::service(
                "ChangeSetNotFound",
                &format!("ChangeSet [{name}] does not exist"),
            ));
        };
        if change_set.status != "CREATE_COMPLETE" {
            return Err(CallError::service(
                "InvalidChangeSetStatus",
                &format!(
                    "ChangeSet [{name}] cannot be executed in its current status of [{}]",
                    change_set.status
                ),
            ));
        }
        account.change_sets.remove(&key);
        let failing = account.failing.clone();
        let mut children = Vec::new();
        let found = account
            .stacks
            .get_mut(stack)
            .ok_or_else(|| missing(stack))?;
        let template = parse(&change_set.template);
        match change_set.kind {
            ChangeSetKind::Import => {
                let failed = (change_set.to_import.iter())
                    .find(|entry| failing.contains_key(&entry.logical_id));
                if let Some(entry) = failed {
                    found.event(
                        &entry.logical_id,
                        &entry.resource_type,
                        "IMPORT_FAILED",
                        failing.get(&entry.logical_id).map(String::as_str),
                    );
                    found.settle(
                        stack,
                        "IMPORT_ROLLBACK_IN_PROGRESS",
                        "IMPORT_ROLLBACK_COMPLETE",
                    );
                    return Ok(());
                }
                for entry in &change_set.to_import {
                    let value = (entry.identifier.values().next())
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                    if entry.resource_type == NESTED_STACK {
                        children.push(value.clone());
                    }
                    found.event(
                        &entry.logical_id,
                        &entry.resource_type,
                        "IMPORT_COMPLETE",
                        None,
                    );
                    found.resources.insert(
                        entry.logical_id.clone(),
                        (entry.resource_type.clone(), value),
                    );
                }
                found.template = change_set.template.clone();
                found.parameters = change_set.parameters.clone();
                found.settle(stack, "IMPORT_IN_PROGRESS", "IMPORT_COMPLETE");
            }
            ChangeSetKind::Update => {
                let declared = template["Resources"]
                    .as_object()
                    .cloned()
                    .unwrap_or_default();
                let created: Vec<String> = (declared.keys())
                    .filter(|id| !found.resources.contains_key(*id))
                    .cloned()
                    .collect();
                if let Some(id) = created.iter().find(|id| failing.contains_key(*id)) {
                    let kind = declared[id]["Type"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    found.event(
                        id,
                        &kind,
                        "CREATE_FAILED",
                        failing.get(id).map(String::as_str),
                    );
                    found.settle(
                        stack,
                        "UPDATE_ROLLBACK_IN_PROGRESS",
                        "UPDATE_ROLLBACK_COMPLETE",
                    );
                    return Ok(());
                }
                let n = account.next + 1;
                account.next = n;
                let found = account.stacks.get_mut(stack).expect("the stack");
                for id in created {
                    let kind = declared[&id]["Type"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    found.event(&id, &kind, "CREATE_COMPLETE", None);
                    found
                        .resources
                        .insert(id.clone(), (kind, format!("{id}-cfn-{n}")));
                }
                found.resources.retain(|id, _| declared.contains_key(id));
                found.template = change_set.template.clone();
                found.parameters = change_set.parameters.clone();
                found.settle(stack, "UPDATE_IN_PROGRESS", "UPDATE_COMPLETE");
            }
        }
        let parent = account.stacks[stack].stack_id.clone();
        for child in children {
            if let Some(child) = account.stacks.values_mut().find(|s| s.stack_id == child) {
                child.parent_id = Some(parent.clone());
            }
        }
        Ok(())
    }

    async fn describe_stack_events(&self, stack: &str) -> Result<Vec<StackEvent>, CallError> {
        let mut account = guard(&self.account);
        let stack = &FakeCloudFormation::named(&account, stack);
        self.log(&mut account, format!("DescribeStackEvents {stack}"));
        let found = account.stacks.get(stack).ok_or_else(|| missing(stack))?;
        Ok(found.events.iter().rev().cloned().collect())
    }

    async fn list_exports(&self) -> Result<BTreeMap<String, String>, CallError> {
        let mut account = guard(&self.account);
        self.log(&mut account, "ListExports".into());
        let mut exports = BTreeMap::new();
        for stack in account.stacks.values() {
            for output in stack.template()["Outputs"]
                .as_object()
                .into_iter()
                .flatten()
            {
                let name = output.1["Export"]["Name"].as_str();
                if let (Some(name), Some(value)) =
                    (name, resolve(&output.1["Value"], &stack.resources))
                {
                    exports.insert(name.to_string(), value);
                }
            }
        }
        Ok(exports)
    }
}

/// Transient templates in a map, their URLs `https://staging/{key}`.
#[derive(Default)]
pub struct FakeStaging {
    uploads: Mutex<BTreeMap<String, String>>,
    purged: Mutex<Vec<String>>,
}

impl FakeStaging {
    fn read(&self, url: &str) -> Option<String> {
        let key = url.strip_prefix("https://staging/")?;
        guard(&self.uploads).get(key).cloned()
    }

    /// The keys still there.
    pub fn kept(&self) -> Vec<String> {
        guard(&self.uploads).keys().cloned().collect()
    }

    /// The keys purged, in order.
    pub fn purged(&self) -> Vec<String> {
        guard(&self.purged).clone()
    }
}

#[async_trait]
impl TemplateStaging for FakeStaging {
    async fn put(&self, stack: &str, name: &str, body: Vec<u8>) -> anyhow::Result<Staged> {
        let key = format!("cdkd-migrate-tmp/{stack}/{name}");
        let text = String::from_utf8(body).expect("a template is text");
        guard(&self.uploads).insert(key.clone(), text);
        Ok(Staged {
            url: format!("https://staging/{key}"),
            key,
        })
    }

    async fn purge(&self, key: &str) {
        guard(&self.uploads).remove(key);
        guard(&self.purged).push(key.to_string());
    }

    fn location(&self, key: &str) -> String {
        format!("s3://staging/{key}")
    }
}
