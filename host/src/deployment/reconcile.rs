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
//! deduplicates a resumed create within 36 hours. A child resource (a log stream, an alias) is
//! found by the name it took within its parent: the intent records the template values of the
//! properties its plugin searches in, resolved here from state. Otherwise cdkd names the
//! resource in a warning, with the call that finds it, so a person can check.

use std::collections::{BTreeMap, BTreeSet};

use cdkd_provider_api::protocol::CREATE_TOKEN_TAG;
use cdkd_provider_api::{ErrorKind, ProviderError};
use serde_json::{Map, Value};

use super::deletes::is_retained;
use super::journal::CreateIntent;
use super::report::Reporter;
use crate::analyzer::ref_values::RefValues;
use crate::provisioning::operations::{
    AccountIds, DeleteCall, Found, ProviderSet, ReadCall, ResourceOperations,
};
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

/// Decides one intent of `stack` against the state record and AWS.
pub async fn decide(
    providers: &dyn ProviderSet,
    stack: &str,
    intent: &CreateIntent,
    state: Option<&StackState>,
    ids: &AccountIds,
) -> Decision {
    decide_within(providers, stack, intent, state, &BTreeMap::new(), ids).await
}

/// Decides every intent. A child whose parent the interrupted run was making too (its scope
/// refers to another intent's logical id, not to a record) is decided after that parent: a
/// parent that does not exist has no children, and one that does tells the child where to look.
pub async fn decide_all(
    providers: &dyn ProviderSet,
    stack: &str,
    intents: &[CreateIntent],
    state: Option<&StackState>,
    ids: &AccountIds,
) -> Vec<Decision> {
    let recorded = |id: &str| state.is_some_and(|s| s.resources.contains_key(id));
    let pending: BTreeSet<&str> = intents.iter().map(|i| i.logical_id.as_str()).collect();
    let mut decisions: Vec<Option<Decision>> = vec![None; intents.len()];
    let mut parents: BTreeMap<String, Parent> = BTreeMap::new();
    loop {
        let ready: Vec<usize> = (0..intents.len())
            .filter(|&i| decisions[i].is_none())
            .filter(|&i| {
                scope_references(&intents[i].scope).iter().all(|id| {
                    recorded(id) || !pending.contains(id.as_str()) || parents.contains_key(id)
                })
            })
            .collect();
        if ready.is_empty() {
            break;
        }
        // Each wave's lookups at once: each is a round trip, and a crashed VPC deploy leaves
        // dozens.
        let wave = futures_util::future::join_all(
            ready
                .iter()
                .map(|&i| decide_within(providers, stack, &intents[i], state, &parents, ids)),
        )
        .await;
        for (i, decision) in ready.into_iter().zip(wave) {
            let intent = &intents[i];
            parents.insert(intent.logical_id.clone(), Parent::of(intent, &decision));
            decisions[i] = Some(decision);
        }
    }
    decisions
        .into_iter()
        .map(|d| {
            d.unwrap_or_else(|| Decision::Unknown("its scope refers to itself in a cycle".into()))
        })
        .collect()
}

/// What a child's lookup learns from its parent's decision.
#[derive(Debug, Clone)]
enum Parent {
    /// The interrupted run made it: the child may be in it.
    Made {
        resource_type: String,
        provisioned_by: ProvisionedBy,
        found: Found,
    },
    /// It does not exist, so no child of it does.
    Absent,
    /// Recorded, or a replacement: state answers for it.
    Recorded,
    /// It could not be checked: neither can its children.
    Unknown,
}

impl Parent {
    fn of(intent: &CreateIntent, decision: &Decision) -> Parent {
        match decision {
            Decision::Unrecorded(found) => Parent::Made {
                resource_type: intent.resource_type.clone(),
                provisioned_by: intent.provisioned_by,
                found: found.clone(),
            },
            Decision::Absent => Parent::Absent,
            Decision::Settled | Decision::ReplacedLeftOver => Parent::Recorded,
            Decision::Unknown(_) => Parent::Unknown,
        }
    }
}

/// The logical ids a scope's `Ref`s and `Fn::GetAtt`s name.
fn scope_references(scope: &Map<String, Value>) -> Vec<String> {
    scope
        .values()
        .filter_map(reference)
        .map(|(id, _)| id)
        .collect()
}

/// A scope value's reference: the logical id, and the attribute (`None` for a `Ref`).
fn reference(value: &Value) -> Option<(String, Option<String>)> {
    let Value::Object(call) = value else {
        return None;
    };
    if call.len() != 1 {
        return None;
    }
    if let Some(Value::String(id)) = call.get("Ref") {
        return Some((id.clone(), None));
    }
    let (id, attribute) = match call.get("Fn::GetAtt")? {
        Value::Array(pair) => (pair.first()?.as_str()?, pair.get(1)?.as_str()?),
        Value::String(dotted) => dotted.split_once('.')?,
        _ => return None,
    };
    Some((id.to_string(), Some(attribute.to_string())))
}

/// [`decide`], with what the parents decided so far.
async fn decide_within(
    providers: &dyn ProviderSet,
    stack: &str,
    intent: &CreateIntent,
    state: Option<&StackState>,
    parents: &BTreeMap<String, Parent>,
    ids: &AccountIds,
) -> Decision {
    let record = state.and_then(|s| s.resources.get(&intent.logical_id));
    if let Some(decided) = settled_by_record(intent, record) {
        return decided;
    }
    let provider = providers.for_layer(&intent.resource_type, intent.provisioned_by);
    let lookup = match intent.physical_name.as_deref() {
        // No name: the plugin finds what this token made (a tag, the service's client token,
        // a name generated from it within the scope's parent).
        None => {
            let scope = match scope_within(providers, intent, state, parents).await {
                Ok(scope) => scope,
                Err(decided) => return decided,
            };
            match provider
                .find_created(
                    &intent.resource_type,
                    &intent.logical_id,
                    &intent.token,
                    stack,
                    &scope,
                )
                .await
            {
                Err(err) if err.kind == ErrorKind::UNSUPPORTED => None,
                other => Some(other),
            }
        }
        Some(name) => Some(
            provider
                .find_named(&intent.resource_type, &intent.logical_id, name, ids)
                .await,
        ),
    };
    classify(intent, record, lookup)
}

/// An intent's scope resolved from state and from parents the interrupted run made; the
/// decision itself when a parent settles it (absent: so is the child).
async fn scope_within(
    providers: &dyn ProviderSet,
    intent: &CreateIntent,
    state: Option<&StackState>,
    parents: &BTreeMap<String, Parent>,
) -> Result<Map<String, Value>, Decision> {
    let mut scope = recorded_scope(&intent.scope, state);
    for (key, value) in &intent.scope {
        if scope.contains_key(key) {
            continue;
        }
        let Some((id, attribute)) = reference(value) else {
            continue;
        };
        match parents.get(&id) {
            Some(Parent::Absent) => return Err(Decision::Absent),
            Some(Parent::Unknown) => {
                return Err(Decision::Unknown(format!(
                    "its {key} is {id}'s, and {id} could not be checked either"
                )))
            }
            Some(Parent::Made {
                resource_type,
                provisioned_by,
                found,
            }) => {
                let resolved = match attribute {
                    None => {
                        Some(RefValues::builtin().value(resource_type, &found.physical_id, None))
                    }
                    // An attribute of a resource nobody recorded: its provider reports it.
                    Some(attribute) => providers
                        .for_layer(resource_type, *provisioned_by)
                        .import(ReadCall {
                            resource_type,
                            logical_id: &id,
                            physical_id: &found.physical_id,
                            properties: &found.properties,
                        })
                        .await
                        .map_err(|err| {
                            Decision::Unknown(format!("reading {id}'s {attribute}: {err}"))
                        })?
                        .attributes
                        .get(&attribute)
                        .cloned(),
                };
                if let Some(resolved) = resolved {
                    scope.insert(key.clone(), resolved);
                }
            }
            Some(Parent::Recorded) | None => {}
        }
    }
    Ok(scope)
}

/// Where a person finds what a create of `resource_type` with `token` made, when cdkd cannot.
fn manual_lookup(resource_type: &str, token: &str) -> String {
    match resource_type {
        // Neither can be tagged at creation nor named by cdkd.
        "AWS::IAM::AccessKey" => "look for a key created at the time of the crash that state does not record: `aws iam list-access-keys --user-name <the key's UserName>`".to_string(),
        "AWS::Lambda::LayerVersion" => "an extra version is harmless and unreferenced: `aws lambda list-layer-versions --layer-name <the LayerName>`".to_string(),
        _ => format!(
            "look for the tag {CREATE_TOKEN_TAG}={token}: `aws resourcegroupstaggingapi get-resources --tag-filters Key={CREATE_TOKEN_TAG},Values={token}`"
        ),
    }
}

/// An intent's scope with what state can tell filled in: literals as they are, `Ref` and
/// `Fn::GetAtt` of recorded resources as their recorded values. A value state cannot resolve
/// is left out: the plugin then names what it misses, and the intent stays a warning.
pub fn recorded_scope(
    scope: &Map<String, Value>,
    state: Option<&StackState>,
) -> Map<String, Value> {
    let resolve = |value: &Value| -> Option<Value> {
        if matches!(value, Value::String(_) | Value::Number(_) | Value::Bool(_)) {
            return Some(value.clone());
        }
        let (id, attribute) = reference(value)?;
        let record = state?.resources.get(&id)?;
        match attribute {
            None => Some(RefValues::builtin().value(
                &record.resource_type,
                &record.physical_id,
                record.attributes.as_ref(),
            )),
            Some(attribute) => record.attributes.as_ref()?.get(&attribute).cloned(),
        }
    };
    scope
        .iter()
        .filter_map(|(key, value)| Some((key.clone(), resolve(value)?)))
        .collect()
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
    lookup: Option<Result<Option<Found>, ProviderError>>,
) -> Decision {
    if let Some(decided) = settled_by_record(intent, record) {
        return decided;
    }
    match lookup {
        None => Decision::Unknown(format!(
            "{} has no name cdkd can look it up by, and its provider cannot find it by its create token ({})",
            intent.resource_type,
            manual_lookup(&intent.resource_type, &intent.token)
        )),
        // A replacement whose predecessor is recorded under the same id found itself.
        Some(Ok(Some(found))) if record.is_some_and(|r| r.physical_id == found.physical_id) => {
            Decision::Settled
        }
        Some(Ok(Some(found))) => Decision::Unrecorded(found),
        Some(Ok(None)) => Decision::Absent,
        Some(Err(reason)) => Decision::Unknown(reason.to_string()),
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
    let decisions = decide_all(providers, stack, &intents, state, ids).await;
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
    let call = DeleteCall {
        resource_type: kind,
        logical_id: id,
        physical_id,
        properties,
    };
    match provider.delete(call).await {
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
    let decisions = decide_all(providers, stack, &intents, state, ids).await;
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
            scope: Map::new(),
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
            Some(Err(ProviderError::other("AccessDenied"))),
        ) {
            Decision::Unknown(reason) => {
                assert_eq!(reason, ProviderError::other("AccessDenied").to_string())
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_scope_is_resolved_from_the_records_it_refers_to() {
        let state: StackState = serde_json::from_value(json!({
            "version": 9, "stackName": "S", "region": "us-east-1", "resources": {
                "Group": {"physicalId": "/app/logs", "resourceType": "AWS::Logs::LogGroup",
                    "properties": {}, "attributes": {"Arn": "arn:aws:logs:us-east-1:1:log-group:/app/logs"}},
                "Ip": {"physicalId": "52.1.2.3|eipalloc-1", "resourceType": "AWS::EC2::EIP",
                    "properties": {}}
            }
        }))
        .unwrap();
        let scope = json!({
            "LogGroupName": {"Ref": "Group"},
            "GroupArn": {"Fn::GetAtt": ["Group", "Arn"]},
            "Dotted": {"Fn::GetAtt": "Group.Arn"},
            "Address": {"Ref": "Ip"},
            "FilterName": "given",
            "Missing": {"Ref": "NotRecorded"},
            "Joined": {"Fn::Join": ["", ["a", "b"]]},
            "Region": {"Ref": "AWS::Region"}
        });
        let resolved = recorded_scope(scope.as_object().unwrap(), Some(&state));
        assert_eq!(
            Value::Object(resolved),
            json!({
                "LogGroupName": "/app/logs",
                "GroupArn": "arn:aws:logs:us-east-1:1:log-group:/app/logs",
                "Dotted": "arn:aws:logs:us-east-1:1:log-group:/app/logs",
                "Address": "52.1.2.3",
                "FilterName": "given"
            })
        );
        // With no state, only literals are known.
        let bare = recorded_scope(scope.as_object().unwrap(), None);
        assert_eq!(Value::Object(bare), json!({"FilterName": "given"}));
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
        use crate::provisioning::operations::{CreateCall, CreateSpec, ProviderSource};
        let cloud = FakeCloud::default();
        let ids = AccountIds::default();
        let spec = CreateSpec {
            token: "cdkd-run-1-subnet",
            name: None,
            needed: &[],
            ids: &ids,
        };
        let made = cloud
            .create(CreateCall {
                resource_type: "AWS::EC2::Subnet",
                logical_id: "Subnet",
                stack: "S",
                properties: &Map::new(),
                spec: &spec,
            })
            .await
            .unwrap();
        let unnamed = |token: &str| CreateIntent {
            logical_id: "Subnet".into(),
            resource_type: "AWS::EC2::Subnet".into(),
            token: token.into(),
            physical_name: None,
            provisioned_by: ProvisionedBy::Sdk,
            scope: Map::new(),
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
        match decide(set, "S", &unnamed("cdkd-run-1-subnet"), None, &ids).await {
            Decision::Unrecorded(found) => assert_eq!(found.physical_id, made.physical_id),
            other => panic!("{other:?}"),
        }
        // Another run's token made nothing here.
        assert_eq!(
            decide(set, "S", &unnamed("cdkd-run-2-subnet"), None, &ids).await,
            Decision::Absent
        );

        // A child whose parent the interrupted run never made cannot exist, whatever a lookup
        // by its token would say: it is decided after its parent, and absent without a lookup.
        let mut child = unnamed("cdkd-run-1-subnet");
        child.logical_id = "Child".into();
        child.scope = json!({"VpcId": {"Ref": "Parent"}})
            .as_object()
            .cloned()
            .unwrap();
        let mut parent = unnamed("cdkd-run-9-vpc");
        parent.logical_id = "Parent".into();
        let decided = decide_all(set, "S", &[child.clone(), parent], None, &ids).await;
        assert_eq!(decided, vec![Decision::Absent, Decision::Absent]);
        // With its parent made, the child is looked up (and found by its token).
        let mut parent = unnamed("cdkd-run-1-subnet");
        parent.logical_id = "Parent".into();
        let decided = decide_all(set, "S", &[child, parent], None, &ids).await;
        assert!(
            matches!(&decided[..], [Decision::Unrecorded(a), Decision::Unrecorded(b)] if a == b),
            "{decided:?}"
        );
    }
}
