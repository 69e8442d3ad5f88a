//! The JSON documents that travel through the frozen FFI surface.
//!
//! These types may grow within a minor version: every new field has a default, and readers
//! ignore fields they do not know, so an older plugin and a newer host still understand each
//! other. Field names are camelCase, like the state file.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Names of the optional operations a resource type can implement (sent through `invoke`).
pub mod operation {
    /// Read the AWS-current property bag of a resource (drift, `observedProperties`).
    pub const READ_CURRENT_STATE: &str = "read_current_state";
    /// Adopt an existing resource by physical id.
    pub const IMPORT: &str = "import";
    /// Read one `Fn::GetAtt` attribute.
    pub const GET_ATTRIBUTE: &str = "get_attribute";
    /// The availability zones of a region, for `Fn::GetAZs` (added in 0.1.3; a type that
    /// lists it answers for the whole plugin).
    pub const AVAILABILITY_ZONES: &str = "availability_zones";
    /// Take the final snapshot a `DeletionPolicy: Snapshot` asks for, before the host deletes
    /// the resource (added in 0.1.6). A type may list it with no handled property: it then
    /// only answers this operation and its resources stay on Cloud Control.
    pub const FINAL_SNAPSHOT: &str = "final_snapshot";
    /// Answer one of the CDK's missing-context lookups (`vpc-provider`, `ami`, ...) the way the
    /// CDK CLI does (added in 0.1.6). A plugin answers the providers it knows and returns an
    /// `unsupported` error for the others, so the host can ask the next plugin.
    pub const CONTEXT_LOOKUP: &str = "context_lookup";
    /// Find the resource a create with a given idempotency token made, for a type with no
    /// name cdkd chooses (added in 0.1.7): after a crash, the next run asks before it creates
    /// again or deletes what the interrupted run left. The plugin tags such resources with the
    /// token at creation ([`CREATE_TOKEN_TAG`]) or passes it as the service's own client token.
    pub const FIND_CREATED: &str = "find_created";
    /// A declaration, never invoked (added in 0.1.7): the type's create adopts an existing
    /// resource identical to the one asked for (a pair that exists or not: an attachment, an
    /// association, a route, a rule, a policy set on a queue), so a create repeated after a
    /// crash makes nothing twice and the host carries it into the next deploy without a
    /// warning.
    pub const IDEMPOTENT_CREATE: &str = "idempotent_create";
}

/// The tag key a plugin puts the create's idempotency token under, on types with no name cdkd
/// chooses, so the resource can be found after a crash ([`operation::FIND_CREATED`]). cdkd's
/// own: readers leave it out of `Tags` (it is never drift), and it stays on the resource.
pub const CREATE_TOKEN_TAG: &str = "cdkd:create-token";

/// Asks for the resource a create with `token` made ([`operation::FIND_CREATED`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FindCreatedRequest {
    /// The logical id in the template, for messages.
    pub logical_id: String,
    /// The create's idempotency token (its `clientToken`).
    pub token: String,
    /// The properties the create was sent (to narrow the search: a subnet's VPC, a pair's two
    /// ids); may be empty when the run that made it is gone. Since 0.1.8 the host fills in
    /// the type's [`ResourceTypeSchema::find_scope`] properties it could resolve.
    #[serde(default)]
    pub properties: Map<String, Value>,
    /// The stack name the create reported (added in 0.1.8), so a name generated from the
    /// token can be generated again; empty from an older host.
    #[serde(default)]
    pub stack_name: String,
}

/// What a [`FindCreatedRequest`] found.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FindCreatedResult {
    /// The physical id of the resource the create made; `None` when it made none. More than
    /// one match is an error, never a guess.
    #[serde(default)]
    pub physical_id: Option<String>,
    /// Its live properties in template shape, as `read_current_state` answers them.
    #[serde(default)]
    pub properties: Map<String, Value>,
}

/// What a plugin says about itself; returned by `describe`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginManifest {
    /// The plugin's name (its crate name by default).
    pub name: String,
    /// The plugin's own semver version, independent of the host's and the API's.
    pub version: String,
    /// One line for `cdkd providers list`.
    #[serde(default)]
    pub description: String,
    /// The provider-api version the plugin was built against.
    pub provider_api_version: String,
    /// The resource types the plugin handles, sorted by type name.
    #[serde(default)]
    pub resource_types: Vec<ResourceTypeSchema>,
}

/// What a plugin declares for one CloudFormation resource type.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTypeSchema {
    /// The CloudFormation type name, e.g. `AWS::S3::Bucket`.
    pub type_name: String,
    /// Template properties the provider applies; any other property routes the resource to
    /// Cloud Control (the "silent drop" check). `*` applies every property.
    #[serde(default)]
    pub handled_properties: Vec<String>,
    /// Properties whose change needs a replacement.
    #[serde(default)]
    pub create_only_properties: Vec<String>,
    /// The optional operations implemented (see [`operation`]).
    #[serde(default)]
    pub operations: Vec<String>,
    /// Present when the physical id is composite (`a|b|c`): the names of its segments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub composite_id: Option<CompositeId>,
    /// Attributes that hold secrets (`SecretAccessKey`): kept for `Fn::GetAtt`, masked
    /// wherever cdkd prints state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sensitive_attributes: Vec<String>,
    /// The properties `find_created` needs from the create to search (added in 0.1.8): the
    /// parent a child lives in (a log stream's `LogGroupName`, an alias's `FunctionName`) and
    /// its own name property. The host records their template values with the create's intent
    /// and resolves them from state after a crash; never list a property that may hold a
    /// secret.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub find_scope: Vec<String>,
}

impl ResourceTypeSchema {
    /// Whether `operation` is listed as implemented.
    pub fn supports(&self, operation: &str) -> bool {
        self.operations.iter().any(|op| op == operation)
    }

    /// Whether this schema handles `type_name`: its own name, or a name its pattern covers.
    pub fn covers(&self, type_name: &str) -> bool {
        type_matches(&self.type_name, type_name)
    }
}

/// The shape of a composite (pipe-delimited) physical id.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompositeId {
    /// Segment names in order, e.g. `["internetGatewayId", "vpcId"]`.
    pub segments: Vec<String>,
    /// What CloudFormation's `Ref` returns for the type (added in 0.1.2; absent: the whole id).
    #[serde(default)]
    pub ref_value: RefValue,
    /// For each segment, the template properties its value is copied from (alternatives, in
    /// order; empty for an AWS-generated segment), so the host can refuse a value containing
    /// `|` before any change (added in 0.1.3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub segment_sources: Vec<Vec<String>>,
}

impl CompositeId {
    /// The first segment whose template value contains `|`: `(segment, property, value)`.
    /// Values not yet known (references resolved at deploy time) are AWS ids and never do.
    pub fn separator_conflict<'a>(
        &'a self,
        properties: &'a Map<String, Value>,
    ) -> Option<(&'a str, &'a str, &'a str)> {
        self.segments
            .iter()
            .zip(&self.segment_sources)
            .find_map(|(segment, sources)| {
                sources.iter().find_map(|property| {
                    properties
                        .get(property)
                        .and_then(Value::as_str)
                        .filter(|value| value.contains('|'))
                        .map(|value| (segment.as_str(), property.as_str(), value))
                })
            })
    }
}

/// How the host turns a recorded physical id into the value `Ref` returns.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RefValue {
    /// The physical id as recorded.
    #[default]
    Whole,
    /// One segment of a composite id; a negative index counts from the end (`-1`: the last).
    Segment(i32),
    /// The named attribute the provider records (an ARN CloudFormation returns); a record
    /// without it falls back to the whole id.
    Attribute(String),
}

impl RefValue {
    /// The `Ref` value of a resource recorded with `physical_id` and `attributes`.
    pub fn apply(&self, physical_id: &str, attributes: Option<&Map<String, Value>>) -> Value {
        match self {
            RefValue::Whole => Value::String(physical_id.to_string()),
            RefValue::Segment(index) => {
                let segments: Vec<&str> = physical_id.split('|').collect();
                // A bare id (older state, or a type that gained its composite later) is its own
                // value.
                if segments.len() == 1 {
                    return Value::String(physical_id.to_string());
                }
                let at = if *index < 0 {
                    segments.len().checked_sub(index.unsigned_abs() as usize)
                } else {
                    Some(*index as usize)
                };
                Value::String(
                    at.and_then(|i| segments.get(i))
                        .copied()
                        .unwrap_or(physical_id)
                        .to_string(),
                )
            }
            RefValue::Attribute(name) => attributes
                .and_then(|a| a.get(name))
                .filter(|v| v.is_string())
                .cloned()
                .unwrap_or_else(|| Value::String(physical_id.to_string())),
        }
    }
}

/// AWS credentials as the host resolved them.
#[derive(Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Credentials {
    /// The access key id.
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: String,
    /// The session token of temporary credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_token: Option<String>,
    /// When temporary credentials expire, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_epoch_secs: Option<u64>,
}

impl std::fmt::Debug for Credentials {
    // Secrets never reach a log line, even at trace level.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"** redacted **")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "** redacted **"),
            )
            .field("expires_at_epoch_secs", &self.expires_at_epoch_secs)
            .finish()
    }
}

/// The host's configuration for a plugin, sent once in `init`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostConfig {
    /// The name under which `plugins.toml` registered the plugin (used in log lines).
    pub plugin_name: String,
    /// The resolved AWS region.
    pub region: String,
    /// Credentials, when the host could resolve any.
    #[serde(default)]
    pub credentials: Option<Credentials>,
    /// An endpoint override for every AWS service (the local emulator in tests).
    #[serde(default)]
    pub endpoint_url: Option<String>,
    /// Address S3 buckets in the path rather than the host name.
    #[serde(default)]
    pub s3_force_path_style: bool,
    /// Worker threads for the plugin's runtime (1 or 2).
    #[serde(default = "default_worker_threads")]
    pub worker_threads: usize,
    /// cdkd's state bucket, for plugins that exchange objects through it (custom resources'
    /// response placeholders); absent when the command has no state bucket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_bucket: Option<StateBucketRef>,
    /// `--resource-timeout`, when the user gave one: the longest one operation may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_timeout_secs: Option<u64>,
    /// What creates and updates wait for before they answer, `cdkd deploy --wait` (added in
    /// 0.1.9; an older host sends none: [`Wait::Dependents`]).
    #[serde(default, skip_serializing_if = "Wait::is_default")]
    pub wait: Wait,
}

/// A state bucket and the region it lives in.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateBucketRef {
    /// The bucket name.
    pub name: String,
    /// Its region (pre-signed URLs must be signed for it).
    pub region: String,
}

fn default_worker_threads() -> usize {
    2
}

/// Names of the calls a plugin can make into the host through `host_call`.
pub mod host_call {
    /// Returns fresh [`super::Credentials`] (payload `{}`).
    pub const CREDENTIALS: &str = "credentials";
}

/// Creates a resource.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateRequest {
    /// The logical id in the template.
    pub logical_id: String,
    /// The stack the resource belongs to (for generated physical names).
    #[serde(default)]
    pub stack_name: String,
    /// The resolved template properties.
    #[serde(default)]
    pub properties: Map<String, Value>,
    /// The create's idempotency token: the same on every attempt of this create, retries and
    /// a resumed run alike. A plugin that names the resource itself derives the name from it
    /// (`cdkd_aws_common::physical_name` does), so a retry finds its own resource.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub client_token: String,
}

/// What a create or update waits for before it answers (`cdkd deploy --wait`, docs/deploy.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Wait {
    /// What a dependent needs to be created correctly, and no more (the default).
    #[default]
    Dependents,
    /// The resource's stable state, as CloudFormation waits for (a distribution `Deployed`, a
    /// load balancer `active`, a service's tasks running, a function `Active`).
    Full,
    /// The call accepted: nothing that is only stabilization (a NAT gateway `pending`, a table
    /// `CREATING`); a dependent that needs more waits for it itself.
    None,
}

impl Wait {
    /// Whether it is the default, which the host leaves out of `HostConfig`.
    pub fn is_default(&self) -> bool {
        *self == Wait::Dependents
    }
}

/// Whether a schema's type name (exact, or a pattern ending in `*` such as `Custom::*`)
/// covers `type_name`. A host before provider-api 0.1.5 reads a pattern as an exact name that
/// no template uses, so a pattern-declaring plugin still loads there and handles nothing new.
pub fn type_matches(declared: &str, type_name: &str) -> bool {
    match declared.strip_suffix('*') {
        Some(prefix) => type_name.len() > prefix.len() && type_name.starts_with(prefix),
        None => declared == type_name,
    }
}

/// Of the declared names that cover `type_name`, the one that wins: the exact name, else the
/// longest pattern.
pub fn best_match<'a>(
    declared: impl IntoIterator<Item = &'a str>,
    type_name: &str,
) -> Option<&'a str> {
    declared
        .into_iter()
        .filter(|name| type_matches(name, type_name))
        .max_by_key(|name| (!name.ends_with('*'), name.len()))
}

/// The outcome of a create.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateResult {
    /// The physical id recorded in state (composite ids as `a|b|c`).
    pub physical_id: String,
    /// `Fn::GetAtt` attributes known after the create.
    #[serde(default)]
    pub attributes: Map<String, Value>,
    /// Attributes of this resource that hold secrets (a custom resource's `NoEcho` response),
    /// beyond the type's own `sensitiveAttributes`: kept for the run, recorded as `***`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sensitive_attributes: Vec<String>,
}

/// Updates a resource.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateRequest {
    /// The logical id in the template.
    pub logical_id: String,
    /// The stack the resource belongs to.
    #[serde(default)]
    pub stack_name: String,
    /// The physical id from state.
    pub physical_id: String,
    /// The desired properties.
    #[serde(default)]
    pub properties: Map<String, Value>,
    /// The properties last applied.
    #[serde(default)]
    pub previous_properties: Map<String, Value>,
}

/// The outcome of an update.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateResult {
    /// The physical id after the update (new when replaced).
    pub physical_id: String,
    /// Whether the provider replaced the resource rather than updating it in place.
    #[serde(default)]
    pub replaced: bool,
    /// Attributes after the update.
    #[serde(default)]
    pub attributes: Map<String, Value>,
    /// Attributes of this resource that hold secrets, as in [`CreateResult`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sensitive_attributes: Vec<String>,
}

/// Deletes a resource.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteRequest {
    /// The logical id in the template.
    pub logical_id: String,
    /// The physical id from state.
    pub physical_id: String,
    /// The properties last applied (some deletes need them, e.g. a policy's role).
    #[serde(default)]
    pub properties: Map<String, Value>,
}

/// The outcome of a delete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "outcome")]
pub enum DeleteResult {
    /// The resource is gone (including: it was already gone).
    Deleted,
    /// The provider left the resource in place on purpose.
    Skipped {
        /// Why, for the user.
        reason: String,
    },
}

/// Reads what AWS currently has for a resource.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadCurrentStateRequest {
    /// The logical id in the template.
    pub logical_id: String,
    /// The physical id from state.
    pub physical_id: String,
    /// The properties last applied, as a hint for what to read.
    #[serde(default)]
    pub properties: Map<String, Value>,
}

/// The AWS-current property bag; `None` when the resource no longer exists.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadCurrentStateResult {
    /// The properties as AWS reports them, in template shape.
    pub properties: Option<Map<String, Value>>,
}

/// Adopts an existing resource.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportRequest {
    /// The logical id in the template.
    pub logical_id: String,
    /// The physical id of the existing resource.
    pub physical_id: String,
    /// The template properties, to locate the resource when the id alone is not enough.
    #[serde(default)]
    pub properties: Map<String, Value>,
}

/// Reads one attribute.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetAttributeRequest {
    /// The logical id in the template.
    pub logical_id: String,
    /// The physical id from state.
    pub physical_id: String,
    /// The attribute name, e.g. `Arn`.
    pub attribute: String,
    /// The properties last applied.
    #[serde(default)]
    pub properties: Map<String, Value>,
}

/// One attribute's value; `None` when it cannot be read (omitted rather than stored as "").
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetAttributeResult {
    /// The attribute's typed JSON value.
    pub value: Option<Value>,
}

/// Asks for the availability zones of a region ([`operation::AVAILABILITY_ZONES`]).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AvailabilityZonesRequest {
    /// The region.
    pub region: String,
}

/// The zones `Fn::GetAZs` returns: the region's available zones, sorted by name.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AvailabilityZonesResult {
    /// Zone names, e.g. `["us-east-1a", "us-east-1b"]`.
    pub zones: Vec<String>,
}

/// One missing-context entry of a cloud assembly ([`operation::CONTEXT_LOOKUP`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextLookupRequest {
    /// The context provider (`vpc-provider`, `security-group`, ...).
    pub provider: String,
    /// The entry's `props`, as the app wrote them (`account`, `region`, the query).
    #[serde(default)]
    pub props: Value,
}

/// The value to store under the entry's key in `cdk.context.json`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextLookupResult {
    /// The value, shaped as the CDK CLI's provider answers.
    pub value: Value,
}

/// Asks for a final snapshot of one resource ([`operation::FINAL_SNAPSHOT`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FinalSnapshotRequest {
    /// The region of the resource.
    pub region: String,
    /// Its logical id, for messages.
    pub logical_id: String,
    /// Its physical id.
    pub physical_id: String,
    /// Its recorded properties.
    #[serde(default)]
    pub properties: Map<String, Value>,
    /// The identifier to give the snapshot where the service lets the caller name it; the
    /// same on a retry, so an "already exists" is the earlier attempt's snapshot.
    pub snapshot_id: String,
}

/// The snapshot taken, once it is complete.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FinalSnapshotResult {
    /// The snapshot's identifier (the service's own where it names snapshots itself); absent
    /// when no snapshot is due (see `note`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<String>,
    /// Why no snapshot was taken, when none was (an Aurora instance, whose cluster holds
    /// the data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ref_values_pick_segments_or_attributes_and_fall_back_to_the_whole_id() {
        let eip = RefValue::Segment(0);
        assert_eq!(eip.apply("52.1.2.3|eipalloc-1", None), "52.1.2.3");
        assert_eq!(RefValue::Segment(-1).apply("arn:b|ns|tbl", None), "tbl");
        assert_eq!(
            RefValue::Segment(1).apply("Z1|www.example.com.|A", None),
            "www.example.com."
        );
        assert_eq!(eip.apply("bare", None), "bare");
        assert_eq!(RefValue::Segment(5).apply("a|b", None), "a|b");
        let attributes: Map<String, Value> =
            serde_json::from_value(serde_json::json!({"Arn": "arn:aws:appsync:k"})).unwrap();
        let arn = RefValue::Attribute("Arn".into());
        assert_eq!(arn.apply("api|key", Some(&attributes)), "arn:aws:appsync:k");
        assert_eq!(arn.apply("api|key", None), "api|key");
        assert_eq!(RefValue::Whole.apply("a|b", None), "a|b");
    }

    #[test]
    fn a_separator_in_a_segment_source_is_found() {
        let id = CompositeId {
            segments: vec!["routeTableId".into(), "destination".into()],
            segment_sources: vec![
                vec!["RouteTableId".into()],
                vec![
                    "DestinationCidrBlock".into(),
                    "DestinationPrefixListId".into(),
                ],
            ],
            ..CompositeId::default()
        };
        let props: Map<String, Value> = serde_json::from_value(
            serde_json::json!({"RouteTableId": "rtb-1", "DestinationPrefixListId": "pl|x"}),
        )
        .unwrap();
        assert_eq!(
            id.separator_conflict(&props),
            Some(("destination", "DestinationPrefixListId", "pl|x"))
        );
        let fine: Map<String, Value> =
            serde_json::from_value(serde_json::json!({"RouteTableId": {"unknown": "x"}})).unwrap();
        assert_eq!(id.separator_conflict(&fine), None);
    }

    #[test]
    fn a_composite_id_without_ref_value_reads_as_whole() {
        let old: CompositeId = serde_json::from_str(r#"{"segments":["a","b"]}"#).unwrap();
        assert_eq!(old.ref_value, RefValue::Whole);
        let new: CompositeId =
            serde_json::from_str(r#"{"segments":["ip","id"],"refValue":{"segment":0}}"#).unwrap();
        assert_eq!(new.ref_value, RefValue::Segment(0));
    }

    #[test]
    fn readers_ignore_fields_from_a_newer_peer() {
        let json = r#"{"name":"p","version":"1.2.3","providerApiVersion":"0.1.9",
            "resourceTypes":[{"typeName":"A::B::C","futureField":true}],"alsoNew":1}"#;
        let manifest: PluginManifest = serde_json::from_str(json).unwrap();
        assert_eq!(manifest.resource_types[0].type_name, "A::B::C");
        assert!(manifest.resource_types[0].operations.is_empty());
    }

    #[test]
    fn delete_result_is_tagged_by_outcome() {
        let skipped = DeleteResult::Skipped {
            reason: "retained".into(),
        };
        let json = serde_json::to_value(&skipped).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"outcome":"skipped","reason":"retained"})
        );
        let deleted: DeleteResult = serde_json::from_str(r#"{"outcome":"deleted"}"#).unwrap();
        assert_eq!(deleted, DeleteResult::Deleted);
    }

    #[test]
    fn credentials_debug_never_prints_secrets() {
        let creds = Credentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "very-secret".into(),
            session_token: Some("token-secret".into()),
            expires_at_epoch_secs: None,
        };
        let printed = format!("{creds:?}");
        assert!(printed.contains("AKIDEXAMPLE"));
        assert!(!printed.contains("very-secret"));
        assert!(!printed.contains("token-secret"));
    }

    #[test]
    fn exact_names_win_over_patterns_and_longer_patterns_over_shorter() {
        assert!(type_matches("Custom::*", "Custom::Anything"));
        assert!(!type_matches("Custom::*", "Custom::"));
        assert!(!type_matches("Custom::*", "AWS::S3::Bucket"));
        assert!(type_matches("AWS::S3::Bucket", "AWS::S3::Bucket"));
        let declared = ["Custom::*", "Custom::Acme*", "Custom::AcmeThing"];
        assert_eq!(
            best_match(declared, "Custom::AcmeThing"),
            Some("Custom::AcmeThing")
        );
        assert_eq!(
            best_match(declared, "Custom::AcmeOther"),
            Some("Custom::Acme*")
        );
        assert_eq!(best_match(declared, "Custom::Else"), Some("Custom::*"));
        assert_eq!(best_match(declared, "AWS::SQS::Queue"), None);
    }
}
