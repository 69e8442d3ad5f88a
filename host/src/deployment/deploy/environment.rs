//! What a deploy resolves intrinsics against: the stack's live records (as this run changes
//! them), other stacks' records, and the secrets this run produced; it writes down which
//! exports and outputs of other stacks it read.

use std::sync::Mutex;

use serde_json::{Map, Value};

use super::run::RunRecord;
use crate::analyzer::intrinsics::{Environment, Lookup};
use crate::analyzer::plan::StackContext;
use crate::deployment::external::{
    cross_account_output, missing_export, SnapshotLookups, StateSnapshot,
};
use crate::deployment::ledger::Ledger;
use crate::deployment::secrets::{RunSecrets, MASK};

/// The deploy-time environment: live records, other stacks' state, and what was read.
pub struct LiveEnvironment<'a> {
    /// The stack's name and target.
    pub context: &'a StackContext,
    /// Its live records.
    pub ledger: &'a Ledger,
    /// Other stacks' records.
    pub snapshot: &'a StateSnapshot,
    /// Where the imports and output reads are written down.
    pub run: &'a Mutex<RunRecord>,
    /// Secret attribute values produced in this run (state holds only their mask).
    pub secrets: &'a RunSecrets,
    /// Resolving outputs, which record a masked secret as the mask.
    pub for_outputs: bool,
}

impl LiveEnvironment<'_> {
    /// Another stack's output as this stack may send it: a masked (`NoEcho`) value is bridged
    /// from a producer deployed earlier in this run, and becomes this run's secret (masked in
    /// this stack's own record); otherwise it cannot be sent and the write is refused.
    fn unmasked(&self, stack: &str, region: &str, output: &str, value: Value) -> Lookup {
        if self.for_outputs || !holds_mask(&value) {
            return Lookup::Known(value);
        }
        match self.snapshot.secret_output(stack, region, output) {
            Some(plain) => {
                self.secrets.remember(plain.clone());
                Lookup::Known(plain.clone())
            }
            None => Lookup::Missing(format!(
                "output {output} of stack {stack} ({region}) is a NoEcho secret that state keeps only as its mask; deploy {stack} and this stack in one `cdkd deploy` run with its custom resource actually running (change one of its properties), or stop marking that response NoEcho"
            )),
        }
    }
}

/// Reads `Endpoint.Address`-style attributes from nested models.
fn attribute_of(attributes: &Map<String, Value>, name: &str) -> Option<Value> {
    if let Some(value) = attributes.get(name) {
        return Some(value.clone());
    }
    let mut parts = name.split('.');
    let mut current = attributes.get(parts.next()?)?;
    for part in parts {
        current = current.get(part)?;
    }
    Some(current.clone())
}

impl Environment for LiveEnvironment<'_> {
    fn pseudo(&self, name: &str) -> Option<Value> {
        self.context.pseudo(name)
    }

    fn resource_ref(&self, logical_id: &str) -> Lookup {
        self.ledger
            .read(|state| match state.resources.get(logical_id) {
                Some(record) => Lookup::Known(self.context.ref_values.value(
                    &record.resource_type,
                    &record.physical_id,
                    record.attributes.as_ref(),
                )),
                None => Lookup::Missing(format!("{logical_id} has not been created")),
            })
    }

    fn resource_attribute(&self, logical_id: &str, attribute: &str) -> Lookup {
        if let Some(secret) = self.secrets.get(logical_id, attribute) {
            return Lookup::Known(secret);
        }
        self.ledger.read(|state| match state.resources.get(logical_id) {
            Some(record) => match record.attributes.as_ref().and_then(|a| attribute_of(a, attribute)) {
                Some(value) if holds_mask(&value) && !self.for_outputs => Lookup::Missing(format!(
                    "{logical_id}.{attribute} is a secret and state keeps only its mask, so cdkd cannot send it again; make {logical_id} produce it anew in this deploy (change one of its properties, e.g. a nonce for a custom resource, or an access key's Serial)"
                )),
                Some(value) => Lookup::Known(value),
                None => Lookup::Missing(format!(
                    "{logical_id} ({}) has no attribute {attribute}; its provider did not report one",
                    record.resource_type
                )),
            },
            None => Lookup::Missing(format!("{logical_id} has not been created")),
        })
    }

    fn import_value(&self, export_name: &str) -> Lookup {
        match self.snapshot.export(&self.context.region, export_name) {
            Some((producer, value)) => {
                self.run
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .imports
                    .insert((
                        producer.to_string(),
                        self.context.region.clone(),
                        export_name.to_string(),
                    ));
                let producer = producer.to_string();
                self.unmasked(&producer, &self.context.region, export_name, value.clone())
            }
            // A CloudFormation export is not written down: cdkd never destroys its producer.
            None => {
                match (self.snapshot).cloudformation_export(&self.context.region, export_name) {
                    Some(value) => Lookup::Known(value.clone()),
                    None => Lookup::Missing(missing_export(
                        self.snapshot,
                        &self.context.region,
                        export_name,
                    )),
                }
            }
        }
    }

    fn stack_output_as(
        &self,
        role_arn: &str,
        stack: &str,
        region: Option<&str>,
        output: &str,
    ) -> Lookup {
        // Not written down in outputReads (the spec defers cross-account reads to a later
        // schema with the producer's account).
        let region = region.unwrap_or(&self.context.region);
        match cross_account_output(self.snapshot, role_arn, stack, region, output) {
            Lookup::Known(value) if holds_mask(&value) && !self.for_outputs => {
                Lookup::Missing(format!(
                    "output {output} of stack {stack} ({region}, read through {role_arn}) is a NoEcho secret that state keeps only as its mask; stop marking that response NoEcho"
                ))
            }
            other => other,
        }
    }

    fn stack_output(&self, stack: &str, region: Option<&str>, output: &str) -> Lookup {
        let region = region.unwrap_or(&self.context.region);
        let lookups = SnapshotLookups {
            snapshot: self.snapshot,
            region,
        };
        let found =
            crate::analyzer::plan::ExternalValues::stack_output(&lookups, stack, region, output);
        // Only a read served from a cdkd record is written down: a producer read from
        // CloudFormation is never re-created by cdkd, so no consumer warning needs it.
        let from_record = (self.snapshot.record(stack, region))
            .is_some_and(|state| state.outputs.contains_key(output));
        if matches!(found, Lookup::Known(_)) && from_record {
            self.run
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .output_reads
                .insert((stack.to_string(), region.to_string(), output.to_string()));
        }
        match found {
            Lookup::Unknown => Lookup::Missing(format!(
                "stack {stack} has no output {output} in {region}; deploy it first"
            )),
            Lookup::Known(value) => self.unmasked(stack, region, output, value),
            other => other,
        }
    }

    fn availability_zones(&self, region: &str) -> Lookup {
        match self.context.availability_zones.get(region) {
            Some(zones) => Lookup::Known(serde_json::json!(zones)),
            None => Lookup::Missing(format!(
                "Fn::GetAZs ({region}): the zones were not fetched before the deploy"
            )),
        }
    }
}

/// Whether a recorded value holds the mask, whole or inside a string (a `NoEcho` parameter
/// embedded in a longer one): either way it is not what AWS must be sent.
fn holds_mask(value: &Value) -> bool {
    value.as_str().is_some_and(|text| text.contains(MASK))
}
