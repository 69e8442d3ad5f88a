//! One resource's step: resolve its properties against the live records, then create,
//! update, replace or re-record it through its provider, and write down what happened.

use std::time::Instant;

use cdkd_provider_api::ErrorKind;
use serde_json::{Map, Value};

use super::environment::LiveEnvironment;
use super::StackRun;
use crate::analyzer::diff::{Action, ResourceChange};
use crate::analyzer::intrinsics::{ResolveError, Resolver};
use crate::analyzer::plan::CreateOnlyProperties;
use crate::deployment::deletes::{delete_record, is_snapshot, take_final_snapshot, SnapshotDue};
use crate::deployment::journal::{FailedOperation, Operation, OperationKind};
use crate::provisioning::names;
use crate::provisioning::operations::{CreateCall, CreateSpec, UpdateCall};
use crate::provisioning::read_budget::ReadPurpose;
use crate::state::schema::ResourceState;

/// Which summary count a completed operation adds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Counted {
    Created,
    Updated,
    Replaced,
}

/// What a step did.
enum Applied {
    /// Nothing was sent: no change, or nothing a changed dependency hands it.
    Unchanged,
    /// A completed operation, already in the live record.
    Done {
        operation: Box<Operation>,
        counted: Counted,
        /// The event line.
        shown: String,
        /// The old half of a replacement, to delete after the deploy.
        superseded: Option<Box<ResourceState>>,
    },
}

/// A resource's step failed; the message is the one the event line and the journal show.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct StepFailed(pub(super) String);

/// Why a step failed.
struct Failure {
    /// The operation that failed; `None` when it failed before any call (not journaled).
    action: Option<OperationKind>,
    message: String,
    /// The properties it sent, secrets masked.
    attempted: Map<String, Value>,
    /// A create refused because the name was taken: it made nothing to reconcile.
    made_nothing: bool,
}

impl Failure {
    fn before_call(message: String) -> Failure {
        Failure {
            action: None,
            message,
            attempted: Map::new(),
            made_nothing: false,
        }
    }
}

impl StackRun<'_> {
    /// One resource's step, with its bookkeeping: the run record, counts and event line.
    pub(super) async fn step(&self, logical_id: &str) -> Result<(), StepFailed> {
        let began = Instant::now();
        let kind = &self.input.template.resources[logical_id].kind;
        let previous = self.ledger.read(|s| s.resources.get(logical_id).cloned());
        match self.apply(logical_id, previous.clone()).await {
            Ok(Applied::Unchanged) => {
                self.record().summary.unchanged += 1;
                Ok(())
            }
            Ok(Applied::Done {
                operation,
                counted,
                shown,
                superseded,
            }) => {
                {
                    let mut run = self.record();
                    match counted {
                        Counted::Created => run.summary.created += 1,
                        Counted::Updated => run.summary.updated += 1,
                        Counted::Replaced => run.summary.replaced += 1,
                    }
                    if let Some(old) = superseded {
                        run.superseded.push((logical_id.to_string(), *old));
                    }
                    run.completed.push(*operation);
                }
                let elapsed = Some(began.elapsed());
                (self.engine.reporter).resource(self.stack(), logical_id, kind, &shown, elapsed);
                Ok(())
            }
            Err(mut failure) => {
                // AWS error messages may quote what was sent.
                failure.message = self.secrets.mask_text(&failure.message);
                {
                    let mut run = self.record();
                    if let Some(action) = failure.action {
                        run.failed.push(FailedOperation {
                            logical_id: logical_id.to_string(),
                            action,
                            resource_type: kind.clone(),
                            before: previous,
                            attempted_properties: failure.attempted,
                            error: failure.message.clone(),
                        });
                    }
                    if failure.made_nothing {
                        run.made_nothing.insert(logical_id.to_string());
                    }
                    run.summary.failed += 1;
                }
                self.engine.reporter.resource(
                    self.stack(),
                    logical_id,
                    kind,
                    &format!("failed: {}", failure.message),
                    Some(began.elapsed()),
                );
                Err(StepFailed(failure.message))
            }
        }
    }

    fn change(&self, logical_id: &str) -> &ResourceChange {
        &self.planned.changes[self.change_at[logical_id]]
    }

    #[allow(
        clippy::expect_used,
        reason = "an invariant: every id the plan orders or names is a node of its graph"
    )]
    async fn apply(
        &self,
        logical_id: &str,
        previous: Option<ResourceState>,
    ) -> Result<Applied, Failure> {
        let change = self.change(logical_id);
        let node = self
            .planned
            .graph
            .node(logical_id)
            .expect("tasks are nodes");
        let kind = &self.input.template.resources[logical_id].kind;
        let recreate = self.options.recreate.contains_key(logical_id);
        // A dependency updated in this run may hand this resource new values (a custom
        // resource's Data, an attribute an update changed): such a resource is resolved
        // again and written only if what it would send changed, as CloudFormation does.
        let upstream_changed = change.action == Action::NoChange && !recreate && {
            let run = self.record();
            node.dependencies.iter().any(|d| run.changed.contains(d))
        };
        if change.action == Action::NoChange && !recreate && !upstream_changed {
            self.refresh_unchanged(logical_id, previous.as_ref());
            return Ok(Applied::Unchanged);
        }
        let properties = self
            .resolve(logical_id)
            .map_err(|err| Failure::before_call(err.to_string()))?;
        let mut replacement = change.replacement;
        let mut action = if recreate {
            Action::Update
        } else {
            change.action
        };
        if upstream_changed {
            let before = previous.as_ref().map(|p| &p.properties);
            let masked = self.secrets.mask_map(&properties);
            if before == Some(&masked) {
                return Ok(Applied::Unchanged);
            }
            action = Action::Update;
            replacement = self
                .create_only
                .create_only(kind)
                .iter()
                .any(|key| before.and_then(|b| b.get(key)) != masked.get(key));
        }
        if matches!(action, Action::Create | Action::Update) {
            self.record().changed.insert(logical_id.to_string());
        }
        match (action, previous) {
            (Action::Update, Some(before)) if change.policies_only && !recreate => {
                Ok(self.policy_only(logical_id, before))
            }
            (Action::Update, Some(before)) if replacement || recreate => {
                self.replace(logical_id, before, properties, recreate).await
            }
            (Action::Update, Some(before)) => self.update(logical_id, before, properties).await,
            _ => self.create(logical_id, properties).await,
        }
    }

    /// No provider call; still persists what a newer cdkd records.
    #[allow(
        clippy::expect_used,
        reason = "an invariant: every id the plan orders or names is a node of its graph"
    )]
    fn refresh_unchanged(&self, logical_id: &str, previous: Option<&ResourceState>) {
        let node = self
            .planned
            .graph
            .node(logical_id)
            .expect("tasks are nodes");
        let wanted = self.decisions[logical_id].provisioned_by();
        let dependencies: Vec<String> = node.dependencies.iter().cloned().collect();
        if previous.is_some_and(|p| {
            p.provisioned_by != wanted || p.dependencies.as_ref() != Some(&dependencies)
        }) {
            self.ledger.change(|s| {
                if let Some(record) = s.resources.get_mut(logical_id) {
                    record.provisioned_by = wanted;
                    record.dependencies = Some(dependencies);
                }
            });
        }
    }

    /// The properties to send, resolved against the live records.
    fn resolve(&self, logical_id: &str) -> Result<Map<String, Value>, ResolveError> {
        let env = LiveEnvironment {
            context: &self.input.context,
            ledger: &self.ledger,
            snapshot: self.snapshot,
            run: &self.run,
            secrets: &self.secrets,
            for_outputs: false,
        };
        let resource = &self.input.template.resources[logical_id];
        Resolver::new(&self.input.template, &env, &self.input.parameters)
            .and_then(|resolver| resolver.resolve_properties(logical_id, &resource.properties))
    }

    /// The record written down: masks where AWS got secrets. `secret` names attributes this
    /// result declares sensitive beyond the type's own.
    #[allow(
        clippy::expect_used,
        reason = "an invariant: every id the plan orders or names is a node of its graph"
    )]
    fn record_of(
        &self,
        logical_id: &str,
        physical_id: String,
        properties: &Map<String, Value>,
        attributes: Map<String, Value>,
        secret: Vec<String>,
    ) -> ResourceState {
        let resource = &self.input.template.resources[logical_id];
        let node = self
            .planned
            .graph
            .node(logical_id)
            .expect("tasks are nodes");
        let sensitive: Vec<String> = self
            .engine
            .registry
            .schema(&resource.kind)
            .map(|schema| schema.sensitive_attributes.clone())
            .unwrap_or_default()
            .into_iter()
            .chain(secret)
            .collect();
        // A consumer's read-back model can echo a secret it was given.
        let attributes = self.secrets.keep(logical_id, &sensitive, attributes);
        ResourceState {
            physical_id,
            resource_type: resource.kind.clone(),
            properties: self.secrets.mask_map(properties),
            observed_properties: None,
            attributes: Some(self.secrets.mask_attributes(logical_id, &attributes)),
            dependencies: Some(node.dependencies.iter().cloned().collect()),
            metadata: None,
            deletion_policy: resource.deletion_policy.clone(),
            update_replace_policy: resource.update_replace_policy.clone(),
            provisioned_by: self.decisions[logical_id].provisioned_by(),
            extra: Map::new(),
        }
    }

    fn failure(
        &self,
        action: OperationKind,
        message: String,
        properties: &Map<String, Value>,
    ) -> Failure {
        Failure {
            action: Some(action),
            message,
            attempted: self.secrets.mask_map(properties),
            made_nothing: false,
        }
    }

    /// Writes `after` into the live record and describes the completed operation.
    #[allow(clippy::too_many_arguments)]
    fn done(
        &self,
        logical_id: &str,
        action: OperationKind,
        counted: Counted,
        before: Option<ResourceState>,
        after: ResourceState,
        shown: String,
        superseded: Option<ResourceState>,
    ) -> Applied {
        self.ledger.change(|s| {
            s.resources.insert(logical_id.to_string(), after.clone());
        });
        if action != OperationKind::Policy {
            self.captures.request(logical_id, ReadPurpose::Baseline);
        }
        Applied::Done {
            operation: Box::new(Operation {
                logical_id: logical_id.to_string(),
                action,
                resource_type: after.resource_type.clone(),
                before,
                after: Some(after),
            }),
            counted,
            shown,
            superseded: superseded.map(Box::new),
        }
    }

    /// A change of `DeletionPolicy` / `UpdateReplacePolicy` only: no AWS call.
    fn policy_only(&self, logical_id: &str, before: ResourceState) -> Applied {
        let resource = &self.input.template.resources[logical_id];
        let mut after = before.clone();
        after.deletion_policy = resource.deletion_policy.clone();
        after.update_replace_policy = resource.update_replace_policy.clone();
        let shown = "updated (policy only, no AWS call)".to_string();
        self.done(
            logical_id,
            OperationKind::Policy,
            Counted::Updated,
            Some(before),
            after,
            shown,
            None,
        )
    }

    /// A replacement: the successor is created (after deleting the old one with `--replace`
    /// or a move between layers, which keeps the name); the old one goes after the deploy.
    async fn replace(
        &self,
        logical_id: &str,
        before: ResourceState,
        properties: Map<String, Value>,
        recreate: bool,
    ) -> Result<Applied, Failure> {
        let replace_first = self.options.replace_first || recreate;
        if replace_first {
            let deleted = async {
                if is_snapshot(before.update_replace_policy.as_deref()) {
                    let due = SnapshotDue {
                        stack: self.stack(),
                        region: &self.input.context.region,
                    };
                    take_final_snapshot(self.providers.as_ref(), due, logical_id, &before).await?;
                }
                delete_record(self.providers.as_ref(), logical_id, &before).await
            }
            .await;
            if let Err(err) = deleted {
                let message = format!("deleting the resource being replaced failed: {err}");
                return Err(self.failure(OperationKind::Replace, message, &properties));
            }
        }
        let created = match self.send_create(logical_id, &properties).await {
            Ok(created) => created,
            Err(err) if err.kind == ErrorKind::ALREADY_EXISTS => {
                let message = format!("{err}. Its replacement has the same name as the resource it replaces; rename it, or deploy with --replace to delete the old one first");
                return Err(self.failure(OperationKind::Replace, message, &properties));
            }
            Err(err) => {
                return Err(self.failure(OperationKind::Replace, err.to_string(), &properties))
            }
        };
        let shown = format!("replaced by {}", created.physical_id);
        let after = self.record_of(
            logical_id,
            created.physical_id,
            &properties,
            created.attributes,
            created.sensitive_attributes,
        );
        let retain =
            crate::deployment::deletes::is_retained(before.update_replace_policy.as_deref());
        let superseded = (!replace_first && !retain).then(|| before.clone());
        Ok(self.done(
            logical_id,
            OperationKind::Replace,
            Counted::Replaced,
            Some(before),
            after,
            shown,
            superseded,
        ))
    }

    /// An update in place (or one the provider turned into a replacement).
    async fn update(
        &self,
        logical_id: &str,
        before: ResourceState,
        properties: Map<String, Value>,
    ) -> Result<Applied, Failure> {
        let resource = &self.input.template.resources[logical_id];
        let provider = self
            .providers
            .for_decision(&resource.kind, &self.decisions[logical_id]);
        let updated = provider
            .update(UpdateCall {
                resource_type: &resource.kind,
                logical_id,
                stack: &self.naming_stack(),
                physical_id: &before.physical_id,
                previous: &before.properties,
                desired: &properties,
                needed: self.needed(logical_id),
            })
            .await;
        let updated = match updated {
            // A conditionally create-only property the handler cannot change in place:
            // replaced, as CloudFormation does.
            Err(err)
                if err.aws_code() == Some("NotUpdatable")
                    && (self.create_only.conditional(&resource.kind).iter()).any(|key| {
                        before.properties.get(key) != self.secrets.mask_map(&properties).get(key)
                    }) =>
            {
                return self.replace(logical_id, before, properties, false).await;
            }
            other => other
                .map_err(|err| self.failure(OperationKind::Update, err.to_string(), &properties))?,
        };
        let after = self.record_of(
            logical_id,
            updated.physical_id,
            &properties,
            updated.attributes,
            updated.sensitive_attributes,
        );
        // A provider that replaced the resource in its update (a custom resource's handler
        // returned a new physical id): the old one is deleted after the deploy.
        let superseded =
            (updated.replaced && after.physical_id != before.physical_id).then(|| before.clone());
        let action = if updated.replaced {
            OperationKind::Replace
        } else {
            OperationKind::Update
        };
        Ok(self.done(
            logical_id,
            action,
            Counted::Updated,
            Some(before),
            after,
            "updated".into(),
            superseded,
        ))
    }

    /// A create, or the adoption of what an interrupted run created.
    async fn create(
        &self,
        logical_id: &str,
        properties: Map<String, Value>,
    ) -> Result<Applied, Failure> {
        let resource = &self.input.template.resources[logical_id];
        let adoption = (self.write_ahead.carried.get(logical_id)).and_then(|c| c.found.clone());
        let created = match adoption {
            Some(found) => {
                self.providers
                    .for_decision(&resource.kind, &self.decisions[logical_id])
                    .adopt(
                        &resource.kind,
                        logical_id,
                        &self.naming_stack(),
                        found,
                        &properties,
                        self.needed(logical_id),
                    )
                    .await
            }
            None => self.send_create(logical_id, &properties).await,
        };
        match created {
            Ok(created) => {
                let shown = format!("created {}", created.physical_id);
                let after = self.record_of(
                    logical_id,
                    created.physical_id,
                    &properties,
                    created.attributes,
                    created.sensitive_attributes,
                );
                Ok(self.done(
                    logical_id,
                    OperationKind::Create,
                    Counted::Created,
                    None,
                    after,
                    shown,
                    None,
                ))
            }
            Err(err) => {
                let mut failure = self.failure(OperationKind::Create, err.to_string(), &properties);
                // Someone else's resource holds the name: this create made nothing.
                failure.made_nothing = err.kind == ErrorKind::ALREADY_EXISTS;
                Err(failure)
            }
        }
    }

    /// Sends the create with this run's token and chosen name.
    async fn send_create(
        &self,
        logical_id: &str,
        properties: &Map<String, Value>,
    ) -> Result<cdkd_provider_api::protocol::CreateResult, cdkd_provider_api::ProviderError> {
        let resource = &self.input.template.resources[logical_id];
        let token = self
            .write_ahead
            .tokens
            .get(logical_id)
            .cloned()
            .unwrap_or_default();
        let chosen = names::choose(
            &resource.kind,
            &self.naming_stack(),
            logical_id,
            &token,
            properties,
        );
        let spec = CreateSpec {
            token: &token,
            name: chosen.as_ref(),
            needed: self.needed(logical_id),
            ids: &self.ids,
        };
        self.providers
            .for_decision(&resource.kind, &self.decisions[logical_id])
            .create(CreateCall {
                resource_type: &resource.kind,
                logical_id,
                stack: &self.naming_stack(),
                properties,
                spec: &spec,
            })
            .await
    }

    /// The stack name providers and generated names see (a nested stack's without `~`).
    fn naming_stack(&self) -> String {
        names::stack_for_names(self.stack())
    }

    fn needed(&self, logical_id: &str) -> &[String] {
        self.needed_attributes
            .get(logical_id)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }
}
