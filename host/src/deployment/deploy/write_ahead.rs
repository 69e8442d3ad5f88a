//! The write-ahead phase: what an interrupted run left is reconciled (its creates carried
//! into this run, its leftovers removed), then every create this run will send is recorded in
//! the journal (`pendingCreates`, with its token and physical name) before the first is sent.

use std::collections::BTreeMap;

use super::{DeployOptions, StackInput};
use crate::analyzer::diff::Action;
use crate::analyzer::plan::StackPlan;
use crate::deployment::engine::Engine;
use crate::deployment::journal::{CreateIntent, Journal};
use crate::deployment::reconcile::{self, Carried};
use crate::provisioning::names;
use crate::provisioning::operations::{AccountIds, ProviderSet};
use crate::provisioning::router::Decision;
use crate::state::schema::StackState;
use crate::state::StateError;

/// What the write-ahead phase hands the resource steps.
#[derive(Default)]
pub struct WriteAhead {
    /// The create token of each resource this run creates.
    pub tokens: BTreeMap<String, String>,
    /// Creates of an interrupted run this run takes over (their resources are adopted).
    pub carried: BTreeMap<String, Carried>,
    /// An interrupted run's intents nobody could settle: they stay in the journal.
    pub unsettled: Vec<CreateIntent>,
}

/// Whether a planned change sends a create (a create, or a replacement).
fn creates(
    action: Action,
    replacement: bool,
    policies_only: bool,
    logical_id: &str,
    options: &DeployOptions,
) -> bool {
    match action {
        Action::Create => true,
        Action::Update => {
            (replacement && !policies_only) || options.recreate.contains_key(logical_id)
        }
        _ => false,
    }
}

/// Reconciles `found` (the journal as the run found it) and records this run's intents.
#[allow(clippy::too_many_arguments)]
#[allow(
    clippy::expect_used,
    reason = "an invariant: every id the plan orders or names is a node of its graph"
)]
pub async fn record_intents(
    engine: &Engine<'_>,
    input: &StackInput,
    providers: &dyn ProviderSet,
    found: Option<Journal>,
    recorded: Option<&StackState>,
    planned: &StackPlan,
    decisions: &BTreeMap<String, Decision>,
    options: &DeployOptions,
    ids: &AccountIds,
) -> Result<WriteAhead, StateError> {
    let (stack, region) = (
        input.context.stack_name.as_str(),
        input.context.region.as_str(),
    );
    let pending = found
        .as_ref()
        .map(|j| j.pending_creates.clone())
        .unwrap_or_default();
    let (mut carried, mut unsettled) =
        reconcile::carry_into_deploy(&engine.reporter, stack, providers, pending, recorded, ids)
            .await;
    let run_id = names::new_run_id();
    let mut intents: Vec<CreateIntent> = Vec::new();
    let mut tokens: BTreeMap<String, String> = BTreeMap::new();
    for change in &planned.changes {
        let logical_id = &change.logical_id;
        let previous = recorded.and_then(|s| s.resources.get(logical_id));
        let (Some(resource), Some(layer)) = (
            input.template.resources.get(logical_id),
            // A nested stack's create is its child's deploy, which keeps its own journal.
            (decisions.get(logical_id))
                .filter(|d| !matches!(d, Decision::NestedStack))
                .and_then(Decision::provisioned_by),
        ) else {
            continue;
        };
        if !creates(
            change.action,
            change.replacement,
            change.policies_only,
            logical_id,
            options,
        ) {
            continue;
        }
        let reuse = carried.get(logical_id).filter(|c| {
            c.intent.resource_type == resource.kind
                && c.intent.provisioned_by == layer
                && previous.is_none()
                && (c.intent.physical_name.is_some() || c.token_reusable() || c.found.is_some())
        });
        let token = match reuse {
            Some(c) => c.intent.token.clone(),
            None => names::create_token(&run_id, stack, region, logical_id),
        };
        let physical_name = names::choose(
            &resource.kind,
            &names::stack_for_names(stack),
            logical_id,
            &token,
            &planned.properties[logical_id],
        )
        .map(|chosen| chosen.name().to_string());
        let scope = providers
            .for_layer(&resource.kind, layer)
            .find_scope(&resource.kind)
            .into_iter()
            .filter_map(|p| Some((p.clone(), resource.properties.get(&p)?.clone())))
            .collect();
        intents.push(CreateIntent {
            logical_id: logical_id.clone(),
            resource_type: resource.kind.clone(),
            token: token.clone(),
            physical_name,
            provisioned_by: layer,
            scope,
            replaces: previous.cloned(),
            created_at: crate::state::schema::now_millis(),
        });
        tokens.insert(logical_id.clone(), token);
    }
    // A carried create the plan no longer makes (or makes differently): what it left goes.
    let stale: Vec<String> = carried
        .iter()
        .filter(|(id, c)| {
            !intents
                .iter()
                .any(|i| &i.logical_id == *id && i.token == c.intent.token)
        })
        .map(|(id, _)| id.clone())
        .collect();
    for id in stale {
        let leftover = carried.remove(&id).expect("listed");
        if let Some(found) = leftover.found {
            let decision = reconcile::Decision::Unrecorded(found);
            let settled = reconcile::settle_by_removal(
                &engine.reporter,
                stack,
                providers,
                &leftover.intent,
                decision,
            )
            .await;
            if !settled {
                unsettled.push(leftover.intent);
            }
        }
    }
    let mut journal = found.unwrap_or_else(|| Journal::new(stack, region));
    let had_pending = !journal.pending_creates.is_empty();
    journal.pending_creates = intents
        .into_iter()
        .chain(unsettled.iter().cloned())
        .collect();
    if had_pending || !journal.pending_creates.is_empty() {
        if journal.segments.is_empty() && journal.pending_creates.is_empty() {
            engine.store.remove_journal(stack, region).await?;
        } else {
            engine.store.write_journal(&journal).await?;
        }
    }
    Ok(WriteAhead {
        tokens,
        carried,
        unsettled,
    })
}
