//! One interface over the two provisioning layers (a plugin, or Cloud Control), with the
//! retries every provider gets: throttling and timeouts with backoff and jitter, and IAM's
//! eventual consistency (a role not yet assumable) on a dense schedule of about 50 s.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cdkd_provider_api::host::PluginLibrary;
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FinalSnapshotRequest,
    FinalSnapshotResult, FindCreatedRequest, FindCreatedResult, ImportRequest,
    ReadCurrentStateRequest, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{ErrorKind, ProviderError};
use serde_json::{Map, Value};

use super::cloud_control::CloudControlProvider;
use super::names::{self, ChosenName, IdFromName};
use super::operations::{
    AccountIds, CreateCall, DeleteCall, Found, Observation, ReadCall, ResourceOperations,
    UpdateCall,
};

/// Where calls for one resource go.
#[derive(Clone)]
pub enum Provider<'a> {
    /// A loaded plugin, by its name in the plugins file (resource providers) or in its
    /// manifest (snapshot providers).
    Plugin(&'a PluginLibrary, String),
    /// Cloud Control.
    CloudControl(Arc<CloudControlProvider>),
}

/// Messages AWS gives while a new IAM role or policy has not propagated yet.
const PROPAGATION_HINTS: &[&str] = &[
    "cannot be assumed",
    "role defined for the function cannot be assumed",
    "is not authorized to perform: sts:AssumeRole",
    "The role defined for the function",
    "does not have permissions to",
    "Invalid principal in policy",
];

fn is_propagation(error: &ProviderError) -> bool {
    PROPAGATION_HINTS
        .iter()
        .any(|hint| error.message.contains(hint))
}

/// Runs `call` again while it fails in a retryable way.
pub async fn with_retries<T, F, Fut>(what: &str, mut call: F) -> Result<T, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ProviderError>>,
{
    let started = tokio::time::Instant::now();
    let mut attempt: u32 = 0;
    let mut last_service_error: Option<String> = None;
    loop {
        match call().await {
            Ok(value) => return Ok(value),
            Err(error) => {
                attempt += 1;
                if error.kind == ErrorKind::THROTTLED {
                    super::concurrency::throttled();
                }
                let wait = if is_propagation(&error) && started.elapsed() < Duration::from_secs(50)
                {
                    // Dense: IAM usually settles within seconds.
                    Duration::from_millis(500 + u64::from(attempt.min(6)) * 250)
                } else if error.kind.is_retryable() && attempt <= 6 {
                    let base = 200u64 * 2u64.pow(attempt.min(6));
                    Duration::from_millis(base / 2 + rand::random::<u64>() % base)
                } else if error.kind == ErrorKind::SERVICE_ERROR
                    && attempt <= 3
                    && last_service_error.as_deref() != Some(error.message.as_str())
                {
                    // The SDK already retried this 5xx; one more round may meet a healthy
                    // host, but the same failure again is the service's answer.
                    last_service_error = Some(error.message.to_string());
                    Duration::from_millis(250 + rand::random::<u64>() % 250)
                } else {
                    return Err(error);
                };
                tracing::debug!("{what}: retrying in {wait:?} after: {error}");
                super::activity::waiting(&if is_propagation(&error) {
                    format!("IAM propagation: trying again (attempt {})", attempt + 1)
                } else if error.kind == ErrorKind::THROTTLED {
                    format!("throttled by AWS: backing off (attempt {})", attempt + 1)
                } else {
                    format!(
                        "trying again after a {} error (attempt {})",
                        error.kind,
                        attempt + 1
                    )
                });
                tokio::time::sleep(wait).await;
            }
        }
    }
}

impl Provider<'_> {
    /// What the live view shows while this provider works on a resource of `resource_type`.
    fn doing(&self, resource_type: &str, verb: &str) {
        let custom = resource_type.starts_with("Custom::")
            || resource_type == "AWS::CloudFormation::CustomResource";
        super::activity::waiting(&match self {
            Provider::Plugin(..) if custom => format!("custom resource handler: {verb}"),
            Provider::Plugin(_, name) => format!("plugin {name}: {verb}"),
            Provider::CloudControl(_) => format!("Cloud Control: {verb}"),
        });
    }
}

#[async_trait::async_trait]
impl ResourceOperations for Provider<'_> {
    fn label(&self) -> String {
        match self {
            Provider::Plugin(_, name) => format!("plugin {name}"),
            Provider::CloudControl(_) => "Cloud Control".into(),
        }
    }

    /// Creates a resource exactly once: every attempt carries `spec`'s token and name, a
    /// retry after a lost answer is deduplicated by the token (Cloud Control) or finds the
    /// resource by its name (an "already exists" for a name cdkd generated, or for any name
    /// on a retry, is the earlier attempt's resource and is adopted, not made again).
    async fn create(&self, call: CreateCall<'_>) -> Result<CreateResult, ProviderError> {
        let CreateCall {
            resource_type,
            logical_id,
            stack,
            properties,
            spec,
        } = call;
        self.doing(resource_type, "creating");
        let sent = names::with_name(resource_type, properties, spec.name);
        let attempts = AtomicU32::new(0);
        let created = with_retries(&format!("create {logical_id}"), || async {
            attempts.fetch_add(1, Ordering::SeqCst);
            match self {
                Provider::Plugin(plugin, _) => {
                    plugin
                        .create(
                            resource_type,
                            &CreateRequest {
                                logical_id: logical_id.to_string(),
                                stack_name: stack.to_string(),
                                properties: sent.clone(),
                                client_token: spec.token.to_string(),
                            },
                        )
                        .await
                }
                Provider::CloudControl(cc) => {
                    cc.create(resource_type, logical_id, &sent, spec.token, spec.needed)
                        .await
                }
            }
        })
        .await;
        let retried = attempts.load(Ordering::SeqCst) > 1;
        match (created, spec.name) {
            (Err(error), Some(name))
                if error.kind == ErrorKind::ALREADY_EXISTS
                    && (retried || matches!(name, ChosenName::Generated(_))) =>
            {
                match self
                    .find_named(resource_type, logical_id, name.name(), spec.ids)
                    .await?
                {
                    Some(found) => {
                        tracing::info!(
                            "{logical_id}: {} already exists from an earlier attempt of this create; adopting it",
                            found.physical_id
                        );
                        self.adopt(
                            resource_type,
                            logical_id,
                            stack,
                            found,
                            properties,
                            spec.needed,
                        )
                        .await
                    }
                    None => Err(error),
                }
            }
            (created, _) => created,
        }
    }

    /// Records an existing resource as this create's result, bringing it to `desired`.
    async fn adopt(
        &self,
        resource_type: &str,
        logical_id: &str,
        stack: &str,
        found: Found,
        desired: &Map<String, Value>,
        needed: &[String],
    ) -> Result<CreateResult, ProviderError> {
        // A type whose every property is create-only has no update: what the interrupted
        // create made is what this one asks for, and its importer reports the attributes.
        if let Provider::Plugin(plugin, _) = self {
            let fixed = plugin.manifest().resource_types.iter().any(|t| {
                t.covers(resource_type)
                    && !t.handled_properties.is_empty()
                    && t.handled_properties
                        .iter()
                        .all(|p| t.create_only_properties.contains(p))
            });
            if fixed {
                return self
                    .import(ReadCall {
                        resource_type,
                        logical_id,
                        physical_id: &found.physical_id,
                        properties: &found.properties,
                    })
                    .await;
            }
        }
        // Compare only what the template sets: the rest of a read model is read-only output.
        let previous: Map<String, Value> = found
            .properties
            .into_iter()
            .filter(|(key, _)| desired.contains_key(key))
            .collect();
        let updated = self
            .update(UpdateCall {
                resource_type,
                logical_id,
                stack,
                physical_id: &found.physical_id,
                previous: &previous,
                desired,
                needed,
            })
            .await?;
        Ok(CreateResult {
            physical_id: updated.physical_id,
            attributes: updated.attributes,
            ..Default::default()
        })
    }

    /// Finds the resource of `resource_type` named `name`, if it exists.
    async fn find_named(
        &self,
        resource_type: &str,
        logical_id: &str,
        name: &str,
        ids: &AccountIds,
    ) -> Result<Option<Found>, ProviderError> {
        let Some(rule) = names::rule_for(resource_type) else {
            return Err(ProviderError::unsupported(format!(
                "{resource_type} {logical_id}: cdkd cannot look this type up by name"
            )));
        };
        match self {
            Provider::CloudControl(cc) => Ok(cc
                .find_by_property(resource_type, rule.property, name)
                .await?
                .map(|(physical_id, properties)| Found {
                    physical_id,
                    properties,
                })),
            Provider::Plugin(plugin, plugin_name) => {
                let mut physical_id = match rule.id {
                    IdFromName::IamPolicyArn => {
                        format!("arn:{}:iam::{}:policy/{name}", ids.partition, ids.account)
                    }
                    IdFromName::Name | IdFromName::Listed => name.to_string(),
                };
                // A queue's id is its URL, a topic's its ARN: the plugin's importer, asked by
                // name, reports the id in an attribute.
                if let Some(attribute) = rule.id_attribute {
                    let unknown = Map::new();
                    let by_name = ReadCall {
                        resource_type,
                        logical_id,
                        physical_id: name,
                        properties: &unknown,
                    };
                    match self.import(by_name).await {
                        Ok(imported) => {
                            if let Some(id) =
                                imported.attributes.get(attribute).and_then(Value::as_str)
                            {
                                physical_id = id.to_string();
                            }
                        }
                        Err(error) if error.kind == ErrorKind::NOT_FOUND => return Ok(None),
                        Err(error) => return Err(error),
                    }
                }
                let readable = plugin.manifest().resource_types.iter().any(|t| {
                    t.covers(resource_type)
                        && t.supports(cdkd_provider_api::protocol::operation::READ_CURRENT_STATE)
                });
                if !readable {
                    return Err(ProviderError::unsupported(format!(
                        "{resource_type} {logical_id}: plugin {plugin_name} cannot read the type back"
                    )));
                }
                let read = with_retries(&format!("read {logical_id}"), || async {
                    plugin
                        .read_current_state(
                            resource_type,
                            &ReadCurrentStateRequest {
                                logical_id: logical_id.to_string(),
                                physical_id: physical_id.clone(),
                                properties: Map::new(),
                            },
                        )
                        .await
                })
                .await;
                match read {
                    Ok(result) => Ok(result.properties.map(|properties| Found {
                        physical_id: physical_id.clone(),
                        properties,
                    })),
                    Err(error) if error.kind == ErrorKind::NOT_FOUND => Ok(None),
                    Err(error) => Err(error),
                }
            }
        }
    }

    fn creates_idempotently(&self, resource_type: &str) -> bool {
        match self {
            Provider::Plugin(plugin, _) => plugin.manifest().resource_types.iter().any(|t| {
                t.covers(resource_type)
                    && t.supports(cdkd_provider_api::protocol::operation::IDEMPOTENT_CREATE)
            }),
            Provider::CloudControl(_) => false,
        }
    }

    fn find_scope(&self, resource_type: &str) -> Vec<String> {
        match self {
            Provider::Plugin(plugin, _) => plugin
                .manifest()
                .resource_types
                .iter()
                .find(|t| t.covers(resource_type))
                .map(|t| t.find_scope.clone())
                .unwrap_or_default(),
            Provider::CloudControl(_) => Vec::new(),
        }
    }

    /// Finds, through its plugin, the resource a create with `token` made.
    async fn find_created(
        &self,
        resource_type: &str,
        logical_id: &str,
        token: &str,
        stack: &str,
        scope: &Map<String, Value>,
    ) -> Result<Option<Found>, ProviderError> {
        let Provider::Plugin(plugin, plugin_name) = self else {
            // Cloud Control's own client token deduplicates a resumed create instead.
            return Err(ProviderError::unsupported(format!(
                "{resource_type} {logical_id}: Cloud Control cannot look a resource up by its create token"
            )));
        };
        let finds = plugin.manifest().resource_types.iter().any(|t| {
            t.covers(resource_type)
                && t.supports(cdkd_provider_api::protocol::operation::FIND_CREATED)
        });
        if !finds {
            return Err(ProviderError::unsupported(format!(
                "{resource_type} {logical_id}: plugin {plugin_name} cannot look this type up by its create token"
            )));
        }
        let request = FindCreatedRequest {
            logical_id: logical_id.to_string(),
            token: token.to_string(),
            properties: scope.clone(),
            stack_name: names::stack_for_names(stack),
        };
        let found: FindCreatedResult = with_retries(&format!("find {logical_id}"), || async {
            plugin
                .invoke(
                    cdkd_provider_api::protocol::operation::FIND_CREATED,
                    resource_type,
                    &request,
                )
                .await
        })
        .await?;
        Ok(found.physical_id.map(|physical_id| Found {
            physical_id,
            properties: found.properties,
        }))
    }

    /// Updates a resource (in place, or the plugin reports a replacement); `needed` names
    /// the attributes the template reads from it.
    async fn update(&self, call: UpdateCall<'_>) -> Result<UpdateResult, ProviderError> {
        let UpdateCall {
            resource_type,
            logical_id,
            stack,
            physical_id,
            previous,
            desired,
            needed,
        } = call;
        self.doing(resource_type, "updating");
        with_retries(&format!("update {logical_id}"), || async {
            match self {
                Provider::Plugin(plugin, _) => {
                    plugin
                        .update(
                            resource_type,
                            &UpdateRequest {
                                logical_id: logical_id.to_string(),
                                stack_name: stack.to_string(),
                                physical_id: physical_id.to_string(),
                                properties: desired.clone(),
                                previous_properties: previous.clone(),
                            },
                        )
                        .await
                }
                Provider::CloudControl(cc) => {
                    cc.update(
                        resource_type,
                        logical_id,
                        physical_id,
                        previous,
                        desired,
                        needed,
                    )
                    .await
                }
            }
        })
        .await
    }

    /// Deletes a resource; one already gone counts as deleted.
    async fn delete(&self, call: DeleteCall<'_>) -> Result<DeleteResult, ProviderError> {
        let DeleteCall {
            resource_type,
            logical_id,
            physical_id,
            properties,
        } = call;
        self.doing(resource_type, "deleting");
        let result = with_retries(&format!("delete {logical_id}"), || async {
            match self {
                Provider::Plugin(plugin, _) => {
                    plugin
                        .delete(
                            resource_type,
                            &DeleteRequest {
                                logical_id: logical_id.to_string(),
                                physical_id: physical_id.to_string(),
                                properties: properties.clone(),
                            },
                        )
                        .await
                }
                Provider::CloudControl(cc) => {
                    cc.delete(resource_type, logical_id, physical_id).await
                }
            }
        })
        .await;
        match result {
            Err(error) if error.kind == ErrorKind::NOT_FOUND => Ok(DeleteResult::Deleted),
            other => other,
        }
    }

    /// What AWS holds now (retried like every other call).
    async fn read_current_state(&self, call: ReadCall<'_>) -> Result<Observation, ProviderError> {
        let ReadCall {
            resource_type,
            logical_id,
            physical_id,
            properties,
        } = call;
        let read = with_retries(&format!("read {logical_id}"), || async {
            match self {
                Provider::Plugin(plugin, _) => {
                    let supports = plugin.manifest().resource_types.iter().any(|t| {
                        t.covers(resource_type)
                            && t.supports(
                                cdkd_provider_api::protocol::operation::READ_CURRENT_STATE,
                            )
                    });
                    if !supports {
                        return Ok(Observation::NoReader);
                    }
                    let read = plugin
                        .read_current_state(
                            resource_type,
                            &ReadCurrentStateRequest {
                                logical_id: logical_id.to_string(),
                                physical_id: physical_id.to_string(),
                                properties: properties.clone(),
                            },
                        )
                        .await?;
                    Ok(read.properties.map_or(Observation::Gone, Observation::Live))
                }
                Provider::CloudControl(cc) => Ok(cc
                    .read_current_state(resource_type, physical_id)
                    .await?
                    .map_or(Observation::Gone, Observation::Live)),
            }
        })
        .await;
        match read {
            Err(error) if error.kind == ErrorKind::NOT_FOUND => Ok(Observation::Gone),
            // A plugin built before the type had a reader answers "unsupported".
            Err(error) if error.kind == ErrorKind::UNSUPPORTED => Ok(Observation::NoReader),
            other => other,
        }
    }

    /// A plugin's importer, or Cloud Control's `GetResource` (its model is the attributes).
    async fn import(&self, call: ReadCall<'_>) -> Result<CreateResult, ProviderError> {
        let ReadCall {
            resource_type,
            logical_id,
            physical_id,
            properties,
        } = call;
        let missing = || {
            ProviderError::new(
                ErrorKind::NOT_FOUND,
                format!("{resource_type} {logical_id}: {physical_id} does not exist"),
            )
        };
        match self {
            Provider::Plugin(plugin, name) => {
                let supports = plugin.manifest().resource_types.iter().any(|t| {
                    t.covers(resource_type)
                        && t.supports(cdkd_provider_api::protocol::operation::IMPORT)
                });
                if !supports {
                    return Err(ProviderError::unsupported(format!(
                        "plugin {name} has no importer for {resource_type}"
                    )));
                }
                let request = ImportRequest {
                    logical_id: logical_id.to_string(),
                    physical_id: physical_id.to_string(),
                    properties: properties.clone(),
                };
                let imported = with_retries(&format!("import {logical_id}"), || async {
                    plugin.import(resource_type, &request).await
                })
                .await;
                match imported {
                    Err(error) if error.kind == ErrorKind::NOT_FOUND => Err(missing()),
                    other => other,
                }
            }
            Provider::CloudControl(cc) => {
                let model = with_retries(&format!("import {logical_id}"), || async {
                    cc.read_current_state(resource_type, physical_id).await
                })
                .await?;
                let model = model.ok_or_else(missing)?;
                Ok(CreateResult {
                    physical_id: physical_id.to_string(),
                    attributes: model,
                    ..Default::default()
                })
            }
        }
    }

    async fn final_snapshot(
        &self,
        resource_type: &str,
        request: &FinalSnapshotRequest,
    ) -> Result<FinalSnapshotResult, ProviderError> {
        self.doing(resource_type, "taking the final snapshot");
        match self {
            Provider::Plugin(plugin, _) => {
                plugin
                    .invoke(
                        cdkd_provider_api::protocol::operation::FINAL_SNAPSHOT,
                        resource_type,
                        request,
                    )
                    .await
            }
            Provider::CloudControl(_) => Err(ProviderError::unsupported(format!(
                "Cloud Control cannot take snapshots of {resource_type}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn throttling_is_retried_and_validation_is_not() {
        let calls = AtomicU32::new(0);
        let result = with_retries("t", || async {
            if calls.fetch_add(1, Ordering::SeqCst) < 2 {
                Err(ProviderError::new(ErrorKind::THROTTLED, "slow down"))
            } else {
                Ok(7)
            }
        })
        .await;
        assert_eq!(result.unwrap(), 7);
        assert_eq!(calls.load(Ordering::SeqCst), 3);

        let calls = AtomicU32::new(0);
        let result: Result<(), _> = with_retries("v", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(ProviderError::validation("bad"))
        })
        .await;
        assert!(result.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_service_error_that_repeats_unchanged_is_the_answer_and_not_throttling() {
        use super::super::concurrency::{scope, Concurrency, Lanes};
        let lanes = Lanes::new(Concurrency::Adaptive);
        assert!(lanes.try_start("AWS::DynamoDB"));
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = scope(Arc::clone(&lanes), "AWS::DynamoDB".into(), async {
            with_retries("s", || async {
                calls.fetch_add(1, Ordering::SeqCst);
                Err(ProviderError::new(ErrorKind::SERVICE_ERROR, "read T: 500"))
            })
            .await
        })
        .await;
        assert_eq!(result.unwrap_err().kind, ErrorKind::SERVICE_ERROR);
        assert_eq!(
            calls.load(Ordering::SeqCst),
            2,
            "one more round, then the answer"
        );
        assert_eq!(
            lanes.figures("AWS::DynamoDB").throttled,
            0,
            "not a slow-down"
        );

        let calls = AtomicU32::new(0);
        let result = with_retries("s", || async {
            match calls.fetch_add(1, Ordering::SeqCst) {
                0 => Err(ProviderError::new(ErrorKind::SERVICE_ERROR, "read T: 500")),
                1 => Err(ProviderError::new(ErrorKind::SERVICE_ERROR, "read T: 503")),
                _ => Ok(3),
            }
        })
        .await;
        assert_eq!(result.unwrap(), 3, "a changing failure is tried again");
    }

    #[tokio::test(start_paused = true)]
    async fn iam_propagation_is_retried_for_about_fifty_seconds() {
        let calls = AtomicU32::new(0);
        let started = tokio::time::Instant::now();
        let result: Result<(), _> = with_retries("p", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(ProviderError::validation(
                "The role defined for the function cannot be assumed by Lambda.",
            ))
        })
        .await;
        assert!(result.is_err());
        let elapsed = started.elapsed().as_secs();
        assert!((50..=60).contains(&elapsed), "{elapsed}");
        assert!(
            calls.load(Ordering::SeqCst) > 20,
            "the schedule is not dense"
        );
    }
}
