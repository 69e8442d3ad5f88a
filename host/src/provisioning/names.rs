//! Physical names cdkd chooses before a create, and the idempotency token they derive from.
//!
//! CloudFormation names a resource whose template leaves its name property unset
//! `{stack}-{logicalId}-{SUFFIX}`. cdkd does the same, but picks the suffix from the create's
//! idempotency token instead of at random, and picks it *before* the call: the name goes into
//! the rollback journal's write-ahead intent, so a retried or resumed create (and `rollback` /
//! `destroy` after a crash) can find the resource by name instead of making a second one.
//!
//! The token itself is derived from the stack, region, logical id and the run's id, so every
//! retry of one create within a run sends the same Cloud Control `ClientToken`.

use serde_json::{Map, Value};

/// How a type is named, and how its physical id follows from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NameRule {
    /// The template property holding the name.
    pub property: &'static str,
    /// The longest name the service accepts.
    pub max_length: usize,
    /// The service accepts lower case only.
    pub lowercase: bool,
    /// A boolean property that, when true, requires the name to end in `.fifo`.
    pub fifo_flag: Option<&'static str>,
    /// What the physical id is, given the name.
    pub id: IdFromName,
    /// For a [`IdFromName::Listed`] type whose plugin is asked by name: the attribute of the
    /// adopted resource that holds its physical id (a queue's URL, a topic's ARN); the name
    /// itself when `None`.
    pub id_attribute: Option<&'static str>,
}

/// How a physical id follows from a resource's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdFromName {
    /// The physical id is the name.
    Name,
    /// An IAM managed policy: `arn:{partition}:iam::{account}:policy{path}{name}`.
    IamPolicyArn,
    /// Found through the type's reader (Cloud Control `ListResources`) by the name property.
    Listed,
}

const fn rule(property: &'static str, max_length: usize, id: IdFromName) -> NameRule {
    NameRule {
        property,
        max_length,
        lowercase: false,
        fifo_flag: None,
        id,
        id_attribute: None,
    }
}

/// The types whose optional name cdkd generates (CloudFormation generates these too).
pub fn rule_for(resource_type: &str) -> Option<NameRule> {
    use IdFromName::{IamPolicyArn, Listed, Name};
    Some(match resource_type {
        "AWS::S3::Bucket" => NameRule {
            lowercase: true,
            ..rule("BucketName", 63, Name)
        },
        "AWS::IAM::Role" => rule("RoleName", 64, Name),
        "AWS::IAM::User" => rule("UserName", 64, Name),
        "AWS::IAM::Group" => rule("GroupName", 128, Name),
        "AWS::IAM::InstanceProfile" => rule("InstanceProfileName", 128, Name),
        "AWS::IAM::ManagedPolicy" => rule("ManagedPolicyName", 128, IamPolicyArn),
        "AWS::Lambda::Function" => rule("FunctionName", 64, Name),
        "AWS::SQS::Queue" => NameRule {
            fifo_flag: Some("FifoQueue"),
            id_attribute: Some("QueueUrl"),
            ..rule("QueueName", 80, Listed)
        },
        "AWS::SNS::Topic" => NameRule {
            fifo_flag: Some("FifoTopic"),
            id_attribute: Some("TopicArn"),
            ..rule("TopicName", 256, Listed)
        },
        "AWS::SSM::Parameter" => rule("Name", 1011, Listed),
        "AWS::DynamoDB::Table" => rule("TableName", 255, Listed),
        "AWS::DynamoDB::GlobalTable" => rule("TableName", 255, Name),
        "AWS::Logs::LogGroup" => rule("LogGroupName", 512, Listed),
        "AWS::Events::EventBus" => rule("Name", 256, Listed),
        "AWS::Events::Rule" => NameRule {
            id_attribute: Some("Arn"),
            ..rule("Name", 64, Listed)
        },
        "AWS::StepFunctions::StateMachine" => rule("StateMachineName", 80, Listed),
        "AWS::Kinesis::Stream" => rule("Name", 128, Listed),
        "AWS::SecretsManager::Secret" => NameRule {
            id_attribute: Some("Id"),
            ..rule("Name", 512, Listed)
        },
        // Named by the template (a required property), listed so a create repeated after a crash
        // adopts the resource its name finds instead of failing on "already exists".
        "AWS::KMS::Alias" => rule("AliasName", 256, Name),
        "AWS::Logs::ResourcePolicy" => rule("PolicyName", 255, Name),
        "AWS::Events::Archive" => rule("ArchiveName", 48, Name),
        "AWS::Scheduler::ScheduleGroup" => rule("Name", 64, Name),
        "AWS::ECR::Repository" => NameRule {
            lowercase: true,
            ..rule("RepositoryName", 256, Listed)
        },
        _ => return None,
    })
}

/// A fresh run id: one per deploy, so tokens of different runs never collide.
pub fn new_run_id() -> String {
    format!("{:016x}", rand::random::<u64>())
}

/// The idempotency token of one create: the same for every retry of it within a run.
///
/// Fits Cloud Control's `ClientToken` (`[-A-Za-z0-9+/=]+`, at most 128 characters).
pub fn create_token(run_id: &str, stack: &str, region: &str, logical_id: &str) -> String {
    format!(
        "cdkd-{run_id}-{:016x}",
        cdkd_aws_common::stable_hash(&[stack, region, logical_id, run_id])
    )
}

/// The CloudFormation-style name for a create with `token` (aws-common's generator, which
/// plugins use too): `{stack}-{logicalId}-{SUFFIX}`, `.fifo` kept where the type needs it.
pub fn generated_name(
    stack: &str,
    logical_id: &str,
    token: &str,
    rule: &NameRule,
    properties: &Map<String, Value>,
) -> String {
    let fifo = rule.fifo_flag.is_some_and(|flag| {
        matches!(properties.get(flag), Some(Value::Bool(true)))
            || properties.get(flag).and_then(Value::as_str) == Some("true")
    });
    cdkd_aws_common::generated_name(
        stack,
        logical_id,
        token,
        rule.max_length,
        rule.lowercase,
        if fifo { ".fifo" } else { "" },
    )
}

/// The name a create will use: the template's, or one generated now (and then injected).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChosenName {
    /// The template names the resource.
    FromTemplate(String),
    /// cdkd generated it; it must be added to the properties sent.
    Generated(String),
}

impl ChosenName {
    /// The name either way.
    pub fn name(&self) -> &str {
        match self {
            ChosenName::FromTemplate(name) | ChosenName::Generated(name) => name,
        }
    }
}

/// The stack name providers see and generated names start with: a nested stack's record name
/// (`Parent~Child`) holds a `~`, which no AWS name allows, so it becomes `Parent-Child`.
pub fn stack_for_names(stack: &str) -> String {
    stack.replace('~', "-")
}

/// Chooses the name of a create of `resource_type`, when the type has a name property.
pub fn choose(
    resource_type: &str,
    stack: &str,
    logical_id: &str,
    token: &str,
    properties: &Map<String, Value>,
) -> Option<ChosenName> {
    let rule = rule_for(resource_type)?;
    match properties.get(rule.property) {
        Some(Value::String(name)) => Some(ChosenName::FromTemplate(name.clone())),
        Some(Value::Null) | None => Some(ChosenName::Generated(generated_name(
            stack, logical_id, token, &rule, properties,
        ))),
        // An unresolved or odd value: leave naming to the service.
        Some(_) => None,
    }
}

/// The properties to send for a create: `properties` with a generated name added.
pub fn with_name(
    resource_type: &str,
    properties: &Map<String, Value>,
    chosen: Option<&ChosenName>,
) -> Map<String, Value> {
    let mut sent = properties.clone();
    if let (Some(ChosenName::Generated(name)), Some(rule)) = (chosen, rule_for(resource_type)) {
        sent.insert(rule.property.to_string(), Value::String(name.clone()));
    }
    sent
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn tokens_are_stable_within_a_run_and_differ_across_runs_and_resources() {
        let a = create_token("run1", "Stack", "us-east-1", "Queue");
        assert_eq!(a, create_token("run1", "Stack", "us-east-1", "Queue"));
        assert_ne!(a, create_token("run2", "Stack", "us-east-1", "Queue"));
        assert_ne!(a, create_token("run1", "Stack", "us-east-1", "Topic"));
        assert!(a.len() <= 128);
        assert!(a
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-+/=".contains(c)));
    }

    #[test]
    fn generated_names_follow_the_token_and_fit_the_rule() {
        let rule = rule_for("AWS::S3::Bucket").unwrap();
        let name = generated_name("MyStack", "Logs83908E77", "t1", &rule, &Map::new());
        assert_eq!(
            name,
            generated_name("MyStack", "Logs83908E77", "t1", &rule, &Map::new())
        );
        assert_ne!(
            name,
            generated_name("MyStack", "Logs83908E77", "t2", &rule, &Map::new())
        );
        assert!(name.starts_with("mystack-logs83908e77-"), "{name}");
        assert_eq!(name, name.to_lowercase());
        let long = generated_name(&"S".repeat(90), &"L".repeat(90), "t", &rule, &Map::new());
        assert_eq!(long.len(), 63, "{long}");
    }

    #[test]
    fn fifo_queues_keep_their_ending_within_the_limit() {
        let rule = rule_for("AWS::SQS::Queue").unwrap();
        let name = generated_name(
            &"S".repeat(60),
            &"Q".repeat(60),
            "t",
            &rule,
            &props(json!({"FifoQueue": true})),
        );
        assert!(name.ends_with(".fifo"), "{name}");
        assert!(name.len() <= 80);
    }

    #[test]
    fn a_template_name_is_kept_and_a_missing_one_injected() {
        let named = props(json!({"QueueName": "orders"}));
        let chosen = choose("AWS::SQS::Queue", "S", "Q", "t", &named).unwrap();
        assert_eq!(chosen, ChosenName::FromTemplate("orders".into()));
        assert_eq!(with_name("AWS::SQS::Queue", &named, Some(&chosen)), named);

        let unnamed = props(json!({"VisibilityTimeout": 30}));
        let chosen = choose("AWS::SQS::Queue", "S", "Q", "t", &unnamed).unwrap();
        let sent = with_name("AWS::SQS::Queue", &unnamed, Some(&chosen));
        assert_eq!(sent["QueueName"], json!(chosen.name()));
        assert_eq!(sent["VisibilityTimeout"], json!(30));
        assert!(choose("AWS::SNS::Subscription", "S", "Q", "t", &unnamed).is_none());
    }
}
