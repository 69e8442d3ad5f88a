//! Reconciling the write-ahead intents (`pendingCreates`) a run left in the rollback journal
//! when it died before finishing: kill -9, a second Ctrl-C, a lost machine.
//!
//! Every create of a deploy is written down (logical id, type, token, physical name) before
//! the first create is sent. The next run that takes the stack's lock reads them back and
//! decides, per intent, from the state record and from what exists in AWS:
//!
//! | record in state | found by name | deploy | rollback / destroy |
//! |---|---|---|---|
//! | yes (this create's) | – | settled | settled |
//! | no | yes | adopt it when the create comes up (same token and name) | delete it |
//! | no | no | create it (same token and name) | nothing to do |
//! | replacement, old id still recorded | yes | delete the new one | delete the new one |
//! | replacement, new id recorded | – | delete the replaced resource | delete the replaced resource |
//!
//! A create with no physical name (a type with no name property) is found by its token instead:
//! a plugin that lists `find_created` looks up the resource it tagged with the token at creation
//! (or gave the service as its client token); through Cloud Control the token still
//! deduplicates a resumed create within 36 hours. Otherwise cdkd names the resource in a
//! warning, with the tag to look for, so a person can check.

use std::collections::BTreeMap;

use cdkd_provider_api::protocol::CREATE_TOKEN_TAG;
use cdkd_provider_api::ErrorKind;
use serde_json::{Map, Value};

use super::deletes::is_retained;
use super::journal::CreateIntent;
use super::report::Reporter;
use crate::provisioning::operations::{ProviderSet, ResourceOperations};
use crate::provisioning::provider::{AccountIds, Found};
use crate::state::schema::{now_millis, ProvisionedBy, ResourceState, StackState};

/// How long a Cloud Control client token deduplicates (36 hours), with a margin.
const TOKEN_LIFETIME_MILLIS: i64 = 35 * 3600 * 1000;

/// A pending create the next deploy carries on with.
#[derive(Debug, Clone)]
pub struct Carried {
    /// The interrupted run's intent (its token and name are reused).
    pub intent: CreateIntent,
    /// The resource it made, when it exists.
    pub found: Option<Found>,
}

impl Carried {
    /// Whether re-sending the intent's token is safe (Cloud Control still remembers it).
    pub fn token_reusable(&self) -> bool {
        self.intent.provisioned_by == ProvisionedBy::CcApi
            && now_millis() - self.intent.created_at < TOKEN_LIFETIME_MILLIS
    }
}

/// What to do about one intent.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Its result is recorded; nothing to do.
    Settled,
    /// The resource exists but is not recorded: adopt it (deploy) or delete it (removal).
    Unrecorded(Found),
    /// A replacement finished and was recorded, but the replaced resource was never deleted.
    ReplacedLeftOver,
    /// Nothing exists.
    Absent,
    /// It cannot be looked up; the reason says why.
    Unknown(String),
}

/// Decides one intent against the state record and AWS.
pub async fn decide(
    providers: &dyn ProviderSet,
    intent: &CreateIntent,
    state: Option<&StackState>,
    ids: &AccountIds,
) -> Decision {
    let record = state.and_then(|s| s.resources.get(&intent.logical_id));
    if let Some(decided) = settled_by_record(intent, record) {
        return decided;
    }
    let provider = providers.for_layer(&intent.resource_type, intent.provisioned_by);
    let lookup = match intent.physical_name.as_deref() {
        // No name: the plugin finds what this token made (a tag, the service's client token).
        None => match provider
            .find_created(&intent.resource_type, &intent.logical_id, &intent.token)
            .await
        {
            Err(err) if err.kind == ErrorKind::UNSUPPORTED => None,
            other => Some(other.map_err(|err| err.to_string())),
        },
        Some(name) => Some(
            provider
                .find_named(&intent.resource_type, &intent.logical_id, name, ids)
                .await
                .map_err(|err| err.to_string()),
        ),
    };
    classify(intent, record, lookup)
}

/// What the state record alone settles: a create whose logical id has a record, or a
/// replacement whose record no longer holds the replaced id.
pub fn settled_by_record(
    intent: &CreateIntent,
    record: Option<&ResourceState>,
) -> Option<Decision> {
    match (&intent.replaces, record) {
        (None, Some(_)) => Some(Decision::Settled),
        (Some(old), Some(record)) if record.physical_id != old.physical_id => {
            Some(Decision::ReplacedLeftOver)
        }
        _ => None,
    }
}

/// The decision once AWS was asked: `lookup` is `None` when the intent has no name to look
/// up by, else what the lookup by name found.
pub fn classify(
    intent: &CreateIntent,
    record: Option<&ResourceState>,
    lookup: Option<Result<Option<Found>, String>>,
) -> Decision {
    if let Some(decided) = settled_by_record(intent, record) {
        return decided;
    }
    match lookup {
        None => Decision::Unknown(format!(
            "{} has no name cdkd can look it up by, and its provider cannot find it by its create token (look for the tag {CREATE_TOKEN_TAG}={}: `aws resourcegroupstaggingapi get-resources --tag-filters Key={CREATE_TOKEN_TAG},Values={}`)",
            intent.resource_type, intent.token, intent.token
        )),
        // A replacement whose predecessor is recorded under the same id found itself.
        Some(Ok(Some(found))) if record.is_some_and(|r| r.physical_id == found.physical_id) => {
            Decision::Settled
        }
        Some(Ok(Some(found))) => Decision::Unrecorded(found),
        Some(Ok(None)) => Decision::Absent,
        Some(Err(reason)) => Decision::Unknown(reason),
    }
}

/// Reconciles intents for `rollback` and `destroy`: whatever the interrupted run made and did
/// not record is deleted. Returns the intents that could not be settled (kept for next time).
pub async fn remove_unrecorded(
    reporter: &Reporter,
    stack: &str,
    providers: &dyn ProviderSet,
    intents: Vec<CreateIntent>,
    state: Option<&StackState>,
    ids: &AccountIds,
) -> Vec<CreateIntent> {
    let mut unsettled = Vec::new();
    let decisions = futures_util::future::join_all(
        intents
            .iter()
            .map(|intent| decide(providers, intent, state, ids)),
    )
    .await;
    for (intent, decision) in intents.into_iter().zip(decisions) {
        if !settle_by_removal(reporter, stack, providers, &intent, decision).await {
            unsettled.push(intent);
        }
    }
    unsettled
}

/// Applies a removal decision; `false` when the intent stays unsettled.
pub async fn settle_by_removal(
    reporter: &Reporter,
    stack: &str,
    providers: &dyn ProviderSet,
    intent: &CreateIntent,
    decision: Decision,
) -> bool {
    let id = &intent.logical_id;
    let kind = &intent.resource_type;
    match decision {
        Decision::Settled | Decision::Absent => true,
        Decision::Unrecorded(found) => {
            let leftover = (found.physical_id.as_str(), &found.properties);
            let provider = providers.for_layer(kind, intent.provisioned_by);
            let why = "created by an interrupted run, never recorded";
            remove_leftover(reporter, stack, intent, provider, leftover, why).await
        }
        Decision::ReplacedLeftOver => match &intent.replaces {
            Some(old) if !is_retained(old.update_replace_policy.as_deref()) => {
                let leftover = (old.physical_id.as_str(), &old.properties);
                let why = "replaced by an interrupted run, not yet deleted";
                remove_leftover(
                    reporter,
                    stack,
                    intent,
                    providers.for_record(old),
                    leftover,
                    why,
                )
                .await
            }
            _ => true,
        },
        Decision::Unknown(reason) => {
            tracing::warn!(
                "stack {stack}: {id} ({kind}) may have been created by an interrupted run (token {}) and cannot be checked: {reason}; look for it in AWS and delete it or import it (docs/deploy.md, \"Recovering by hand\")",
                intent.token
            );
            true
        }
    }
}

/// Deletes one leftover `(physical id, properties)` and reports it; `false` when it stays.
async fn remove_leftover(
    reporter: &Reporter,
    stack: &str,
    intent: &CreateIntent,
    provider: &dyn ResourceOperations,
    (physical_id, properties): (&str, &Map<String, Value>),
    why: &str,
) -> bool {
    let (id, kind) = (&intent.logical_id, &intent.resource_type);
    match provider.delete(kind, id, physical_id, properties).await {
        Ok(_) => {
            reporter.resource(
                stack,
                id,
                kind,
                &format!("deleted {physical_id} ({why})"),
                None,
            );
            true
        }
        Err(err) => {
            let message = format!("could not delete {physical_id} ({why}): {err}");
            reporter.resource(stack, id, kind, &message, None);
            false
        }
    }
}

/// Reconciles intents for a deploy: leftovers of replacements are deleted now; plain creates
/// are carried into this run (by logical id) so the create reuses their token and name and
/// adopts what exists. Returns the carried creates and the intents left unsettled.
pub async fn carry_into_deploy(
    reporter: &Reporter,
    stack: &str,
    providers: &dyn ProviderSet,
    intents: Vec<CreateIntent>,
    state: Option<&StackState>,
    ids: &AccountIds,
) -> (BTreeMap<String, Carried>, Vec<CreateIntent>) {
    let mut carried = BTreeMap::new();
    let mut unsettled = Vec::new();
    // Every lookup at once: each is a round trip, and a crashed VPC deploy leaves dozens.
    let decisions = futures_util::future::join_all(
        intents
            .iter()
            .map(|intent| decide(providers, intent, state, ids)),
    )
    .await;
    for (intent, decision) in intents.into_iter().zip(decisions) {
        match decision {
            Decision::Unrecorded(found) if intent.replaces.is_none() => {
                carried.insert(
                    intent.logical_id.clone(),
                    Carried {
                        intent,
                        found: Some(found),
                    },
                );
            }
            Decision::Absent if intent.replaces.is_none() => {
                carried.insert(
                    intent.logical_id.clone(),
                    Carried {
                        intent,
                        found: None,
                    },
                );
            }
            Decision::Unknown(_)
                if intent.replaces.is_none()
                    && (intent.provisioned_by == ProvisionedBy::CcApi
                        || providers
                            .for_layer(&intent.resource_type, intent.provisioned_by)
                            .creates_idempotently(&intent.resource_type)) =>
            {
                // No name, but Cloud Control deduplicates the token itself, or the plugin's
                // create adopts the identical pair an interrupted run made.
                carried.insert(
                    intent.logical_id.clone(),
                    Carried {
                        intent,
                        found: None,
                    },
                );
            }
            decision => {
                if !settle_by_removal(reporter, stack, providers, &intent, decision).await {
                    unsettled.push(intent);
                }
            }
        }
    }
    (carried, unsettled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(physical_id: &str) -> ResourceState {
        serde_json::from_value(json!({
            "physicalId": physical_id, "resourceType": "AWS::SQS::Queue", "properties": {}
        }))
        .unwrap()
    }

    fn intent(replaces: Option<&str>, name: Option<&str>) -> CreateIntent {
        CreateIntent {
            logical_id: "Queue".into(),
            resource_type: "AWS::SQS::Queue".into(),
            token: "cdkd-run-1".into(),
            physical_name: name.map(str::to_string),
            provisioned_by: ProvisionedBy::CcApi,
            replaces: replaces.map(record),
            created_at: now_millis(),
        }
    }

    fn found(physical_id: &str) -> Found {
        Found {
            physical_id: physical_id.into(),
            properties: Map::new(),
        }
    }

    #[test]
    fn a_recorded_create_is_settled_without_asking_aws() {
        let decided = settled_by_record(&intent(None, Some("q")), Some(&record("url")));
        assert_eq!(decided, Some(Decision::Settled));
    }

    #[test]
    fn an_unrecorded_create_found_by_name_is_adopted_or_deleted() {
        let decided = classify(&intent(None, Some("q")), None, Some(Ok(Some(found("url")))));
        assert_eq!(decided, Decision::Unrecorded(found("url")));
        let absent = classify(&intent(None, Some("q")), None, Some(Ok(None)));
        assert_eq!(absent, Decision::Absent);
    }

    #[test]
    fn a_finished_replacement_leaves_the_replaced_resource_to_delete() {
        let decided = settled_by_record(&intent(Some("old"), Some("q")), Some(&record("new")));
        assert_eq!(decided, Some(Decision::ReplacedLeftOver));
    }

    #[test]
    fn an_unfinished_replacement_deletes_the_new_half() {
        let pending = intent(Some("old"), Some("q2"));
        let still_old = record("old");
        assert_eq!(settled_by_record(&pending, Some(&still_old)), None);
        let decided = classify(&pending, Some(&still_old), Some(Ok(Some(found("new")))));
        assert_eq!(decided, Decision::Unrecorded(found("new")));
        // The lookup found the recorded resource itself: nothing was made.
        let itself = classify(&pending, Some(&still_old), Some(Ok(Some(found("old")))));
        assert_eq!(itself, Decision::Settled);
    }

    #[test]
    fn what_cannot_be_looked_up_is_unknown_and_says_why() {
        match classify(&intent(None, None), None, None) {
            Decision::Unknown(reason) => assert!(reason.contains("no name"), "{reason}"),
            other => panic!("{other:?}"),
        }
        match classify(
            &intent(None, Some("q")),
            None,
            Some(Err("AccessDenied".into())),
        ) {
            Decision::Unknown(reason) => assert_eq!(reason, "AccessDenied"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_cloud_control_token_is_reused_only_while_cloud_control_remembers_it() {
        let fresh = Carried {
            intent: intent(None, None),
            found: None,
        };
        assert!(fresh.token_reusable());
        let mut old = fresh.clone();
        old.intent.created_at -= 36 * 3600 * 1000;
        assert!(!old.token_reusable());
        let mut plugin = fresh;
        plugin.intent.provisioned_by = ProvisionedBy::Sdk;
        assert!(!plugin.token_reusable());
    }

    #[tokio::test]
    async fn an_unnamed_create_is_found_by_its_token() {
        use crate::deployment::fakes::FakeCloud;
        use crate::provisioning::operations::ProviderSource;
        use crate::provisioning::provider::CreateSpec;
        let cloud = FakeCloud::default();
        let ids = AccountIds::default();
        let spec = CreateSpec {
            token: "cdkd-run-1-subnet",
            name: None,
            needed: &[],
            ids: &ids,
        };
        let made = cloud
            .create("AWS::EC2::Subnet", "Subnet", "S", &Map::new(), &spec)
            .await
            .unwrap();
        let unnamed = |token: &str| CreateIntent {
            logical_id: "Subnet".into(),
            resource_type: "AWS::EC2::Subnet".into(),
            token: token.into(),
            physical_name: None,
            provisioned_by: ProvisionedBy::Sdk,
            replaces: None,
            created_at: now_millis(),
        };
        let set = cloud
            .prepare(
                "us-east-1",
                &Default::default(),
                std::time::Duration::from_secs(1),
            )
            .await
            .unwrap();
        let set = set.as_ref();
        match decide(set, &unnamed("cdkd-run-1-subnet"), None, &ids).await {
            Decision::Unrecorded(found) => assert_eq!(found.physical_id, made.physical_id),
            other => panic!("{other:?}"),
        }
        // Another run's token made nothing here.
        assert_eq!(
            decide(set, &unnamed("cdkd-run-2-subnet"), None, &ids).await,
            Decision::Absent
        );
    }
}
