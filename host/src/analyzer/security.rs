//! The security-sensitive part of a plan, as the CDK CLI shows it before asking for approval:
//! IAM policy statements, managed policy attachments and security-group rules that a deploy
//! adds or removes. A change *broadens* permissions when it adds any of them.
//!
//! The sets are compared whole, before (the records of the resources that change) against
//! after (the planned properties of the resources that change), so an edit of one statement
//! shows as its old form removed and its new form added, as CloudFormation's diff shows it.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::diff::Action;
use super::intrinsics::UNKNOWN_KEY;
use super::plan::StackPlan;
use crate::state::schema::StackState;

/// Whether a row is added or removed by the deploy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Sign {
    /// Added: the deploy grants it.
    Added,
    /// Removed: the deploy takes it away.
    Removed,
}

impl Sign {
    /// `+` or `-`, as the CDK CLI's tables mark rows.
    pub fn mark(self) -> &'static str {
        match self {
            Sign::Added => "+",
            Sign::Removed => "-",
        }
    }
}

/// One IAM statement (identity or resource policy, a role's trust, a Lambda permission).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Statement {
    /// What it applies to.
    pub resource: String,
    /// `Allow` or `Deny`.
    pub effect: String,
    /// The actions.
    pub action: String,
    /// Who it is granted to.
    pub principal: String,
    /// Its condition (JSON), empty when none.
    pub condition: String,
}

/// One managed policy attached to a role, user or group.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ManagedPolicy {
    /// The role, user or group (its logical id).
    pub resource: String,
    /// The policy's ARN.
    pub policy: String,
}

/// One security-group rule.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rule {
    /// The group (its id, or the logical id of a group being created).
    pub group: String,
    /// `In` (ingress) or `Out` (egress).
    pub direction: &'static str,
    /// Protocol and ports, `TCP 443`, `Everything`.
    pub protocol: String,
    /// The other side: a CIDR, a prefix list or a security group.
    pub peer: String,
}

/// The security-sensitive changes of one stack's plan.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct SecurityChanges {
    /// IAM statements added or removed.
    pub statements: Vec<(Sign, Statement)>,
    /// Managed policy attachments added or removed.
    pub managed_policies: Vec<(Sign, ManagedPolicy)>,
    /// Security-group rules added or removed.
    pub rules: Vec<(Sign, Rule)>,
}

/// When a deploy asks for approval (`--require-approval`, as the CDK CLI's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequireApproval {
    /// Never ask.
    Never,
    /// Ask for any security-sensitive change.
    AnyChange,
    /// Ask when permissions or network access widen (the default).
    Broadening,
}

impl RequireApproval {
    /// Whether `changes` need the user's approval at this level.
    pub fn needed_for(self, changes: &SecurityChanges) -> bool {
        match self {
            RequireApproval::Never => false,
            RequireApproval::AnyChange => !changes.is_empty(),
            RequireApproval::Broadening => changes.broadens(),
        }
    }

    /// The flag's value, as it is spelled on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            RequireApproval::Never => "never",
            RequireApproval::AnyChange => "any-change",
            RequireApproval::Broadening => "broadening",
        }
    }
}

/// A `--require-approval` value that is not a level (the text given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0} is not a level: write never, any-change or broadening")]
pub struct NotALevel(pub String);

impl std::str::FromStr for RequireApproval {
    type Err = NotALevel;

    fn from_str(text: &str) -> Result<Self, NotALevel> {
        match text {
            "never" => Ok(RequireApproval::Never),
            "any-change" => Ok(RequireApproval::AnyChange),
            "broadening" => Ok(RequireApproval::Broadening),
            other => Err(NotALevel(other.to_string())),
        }
    }
}

impl SecurityChanges {
    /// The changes `planned` makes to what `recorded` holds.
    pub fn of(planned: &StackPlan, recorded: Option<&StackState>) -> SecurityChanges {
        let mut before = Found::default();
        let mut after = Found::default();
        for change in &planned.changes {
            let id = change.logical_id.as_str();
            if matches!(change.action, Action::Update | Action::Delete) {
                if let Some(record) = recorded.and_then(|r| r.resources.get(id)) {
                    let properties = planned.no_echo.mask_map(&record.properties);
                    before.add(id, &record.resource_type, &properties);
                }
            }
            if matches!(change.action, Action::Create | Action::Update) {
                if let Some(properties) = planned.properties.get(id) {
                    let properties = planned.no_echo.mask_map(properties);
                    after.add(id, &change.resource_type, &properties);
                }
            }
        }
        SecurityChanges {
            statements: signed(&before.statements, &after.statements),
            managed_policies: signed(&before.managed_policies, &after.managed_policies),
            rules: signed(&before.rules, &after.rules),
        }
    }

    /// Whether the plan touches nothing security-sensitive.
    pub fn is_empty(&self) -> bool {
        self.statements.is_empty() && self.managed_policies.is_empty() && self.rules.is_empty()
    }

    /// `2 IAM statements added, 1 security-group rule removed`: what a refusal names.
    pub fn counts(&self) -> String {
        let mut parts = Vec::new();
        let mut count = |n: usize, what: &str, sign: &str| {
            if n > 0 {
                parts.push(format!(
                    "{n} {what}{} {sign}",
                    if n == 1 { "" } else { "s" }
                ));
            }
        };
        for (sign, word) in [(Sign::Added, "added"), (Sign::Removed, "removed")] {
            count(
                self.statements.iter().filter(|(s, _)| *s == sign).count(),
                "IAM statement",
                word,
            );
            count(
                self.managed_policies
                    .iter()
                    .filter(|(s, _)| *s == sign)
                    .count(),
                "managed policy attachment",
                word,
            );
            count(
                self.rules.iter().filter(|(s, _)| *s == sign).count(),
                "security-group rule",
                word,
            );
        }
        parts.join(", ")
    }

    /// Whether the plan adds a statement, a managed policy or a rule.
    pub fn broadens(&self) -> bool {
        let added = |sign: &Sign| *sign == Sign::Added;
        self.statements.iter().any(|(s, _)| added(s))
            || self.managed_policies.iter().any(|(s, _)| added(s))
            || self.rules.iter().any(|(s, _)| added(s))
    }
}

/// What is in `after` and not `before` (added), then the reverse (removed).
fn signed<T: Ord + Clone>(before: &BTreeSet<T>, after: &BTreeSet<T>) -> Vec<(Sign, T)> {
    (after.difference(before).map(|t| (Sign::Added, t.clone())))
        .chain(before.difference(after).map(|t| (Sign::Removed, t.clone())))
        .collect()
}

/// The statements, attachments and rules of a set of resources.
#[derive(Default)]
struct Found {
    statements: BTreeSet<Statement>,
    managed_policies: BTreeSet<ManagedPolicy>,
    rules: BTreeSet<Rule>,
}

impl Found {
    /// Adds what resource `id` of `kind` with `properties` grants.
    fn add(&mut self, id: &str, kind: &str, properties: &Map<String, Value>) {
        let get = |key: &str| properties.get(key);
        let attached = || -> String {
            ["Roles", "Users", "Groups"]
                .iter()
                .filter_map(|key| get(key))
                .map(show)
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match kind {
            "AWS::IAM::Role" => {
                let role = format!("${{{id}.Arn}}");
                self.policy(get("AssumeRolePolicyDocument"), Some(&role), None);
                self.inline(id, get("Policies"));
                self.managed(id, get("ManagedPolicyArns"));
            }
            "AWS::IAM::User" | "AWS::IAM::Group" => {
                self.inline(id, get("Policies"));
                self.managed(id, get("ManagedPolicyArns"));
            }
            "AWS::IAM::Policy" | "AWS::IAM::ManagedPolicy" => {
                let principal = format!("AWS:{}", attached());
                self.policy(get("PolicyDocument"), None, Some(&principal));
            }
            "AWS::IAM::RolePolicy" => {
                let principal = format!("AWS:{}", get("RoleName").map(show).unwrap_or_default());
                self.policy(get("PolicyDocument"), None, Some(&principal));
            }
            "AWS::S3::BucketPolicy"
            | "AWS::SQS::QueuePolicy"
            | "AWS::SNS::TopicPolicy"
            | "AWS::Logs::ResourcePolicy" => self.policy(get("PolicyDocument"), None, None),
            "AWS::KMS::Key" => self.policy(get("KeyPolicy"), Some(&format!("${{{id}}}")), None),
            "AWS::SecretsManager::ResourcePolicy" => {
                let secret = get("SecretId").map(show);
                self.policy(get("ResourcePolicy"), secret.as_deref(), None);
            }
            "AWS::ECR::Repository" => self.policy(
                get("RepositoryPolicyText"),
                Some(&format!("${{{id}}}")),
                None,
            ),
            "AWS::Lambda::Permission" => {
                let mut condition = Map::new();
                for key in ["SourceArn", "SourceAccount", "PrincipalOrgID"] {
                    if let Some(value) = get(key) {
                        condition.insert(key.into(), value.clone());
                    }
                }
                self.statements.insert(Statement {
                    resource: get("FunctionName").map(show).unwrap_or_default(),
                    effect: "Allow".into(),
                    action: get("Action").map(show).unwrap_or_default(),
                    principal: get("Principal").map(show).unwrap_or_default(),
                    condition: if condition.is_empty() {
                        String::new()
                    } else {
                        Value::Object(condition).to_string()
                    },
                });
            }
            "AWS::EC2::SecurityGroup" => {
                let group = format!("${{{id}.GroupId}}");
                for (key, direction) in [
                    ("SecurityGroupIngress", "In"),
                    ("SecurityGroupEgress", "Out"),
                ] {
                    for rule in get(key).and_then(Value::as_array).into_iter().flatten() {
                        if let Some(rule) = rule.as_object() {
                            self.rules.insert(rule_of(group.clone(), direction, rule));
                        }
                    }
                }
            }
            "AWS::EC2::SecurityGroupIngress" | "AWS::EC2::SecurityGroupEgress" => {
                let direction = if kind.ends_with("Ingress") {
                    "In"
                } else {
                    "Out"
                };
                let group = get("GroupId")
                    .or(get("GroupName"))
                    .map(show)
                    .unwrap_or_default();
                self.rules.insert(rule_of(group, direction, properties));
            }
            _ => {}
        }
    }

    /// A role's, user's or group's inline `Policies`.
    fn inline(&mut self, id: &str, policies: Option<&Value>) {
        let principal = format!("AWS:${{{id}}}");
        for policy in policies.and_then(Value::as_array).into_iter().flatten() {
            self.policy(policy.get("PolicyDocument"), None, Some(&principal));
        }
    }

    /// `ManagedPolicyArns`.
    fn managed(&mut self, id: &str, arns: Option<&Value>) {
        for arn in arns.and_then(Value::as_array).into_iter().flatten() {
            self.managed_policies.insert(ManagedPolicy {
                resource: format!("${{{id}}}"),
                policy: show(arn),
            });
        }
    }

    /// A policy document's statements; `resource` and `principal` stand in for what an
    /// identity policy or a trust policy does not say.
    fn policy(
        &mut self,
        document: Option<&Value>,
        resource: Option<&str>,
        principal: Option<&str>,
    ) {
        let document = match document {
            // Some types (a log group's resource policy) take the document as a JSON string.
            Some(Value::String(text)) => serde_json::from_str(text).unwrap_or(Value::Null),
            Some(value) => value.clone(),
            None => return,
        };
        let statements = match document.get("Statement") {
            Some(Value::Array(items)) => items.clone(),
            Some(one) => vec![one.clone()],
            None => Vec::new(),
        };
        for statement in statements {
            let field = |key: &str| statement.get(key).map(show).unwrap_or_default();
            let or_not = |key: &str, not: &str| {
                let value = field(key);
                if value.is_empty() && statement.get(not).is_some() {
                    format!("NOT {}", field(not))
                } else {
                    value
                }
            };
            let given = or_not("Resource", "NotResource");
            let named = or_not("Principal", "NotPrincipal");
            self.statements.insert(Statement {
                resource: if given.is_empty() {
                    resource.unwrap_or_default().into()
                } else {
                    given
                },
                effect: field("Effect"),
                action: or_not("Action", "NotAction"),
                principal: if named.is_empty() {
                    principal.unwrap_or_default().into()
                } else {
                    named
                },
                condition: statement
                    .get("Condition")
                    .map(Value::to_string)
                    .unwrap_or_default(),
            });
        }
    }
}

/// A rule's protocol, ports and peer, as the CDK CLI prints them.
fn rule_of(group: String, direction: &'static str, rule: &Map<String, Value>) -> Rule {
    let get = |key: &str| rule.get(key).map(show).unwrap_or_default();
    let protocol = match get("IpProtocol").as_str() {
        "-1" | "" => "Everything".to_string(),
        p => {
            let (from, to) = (get("FromPort"), get("ToPort"));
            let name = match p {
                "6" | "tcp" => "TCP".to_string(),
                "17" | "udp" => "UDP".to_string(),
                "1" | "icmp" => "ICMP".to_string(),
                other => other.to_uppercase(),
            };
            if from.is_empty() || from == to {
                format!("{name} {from}").trim_end().to_string()
            } else {
                format!("{name} {from}-{to}")
            }
        }
    };
    let peer = [
        "CidrIp",
        "CidrIpv6",
        "SourcePrefixListId",
        "DestinationPrefixListId",
        "SourceSecurityGroupId",
        "DestinationSecurityGroupId",
        "SourceSecurityGroupName",
    ]
    .iter()
    .map(|key| get(key))
    .find(|v| !v.is_empty())
    .unwrap_or_default();
    Rule {
        group,
        direction,
        protocol,
        peer,
    }
}

/// A value as a table cell: strings as they are, lists joined, a value known only after the
/// deploy as `${what}`, other JSON compact.
pub fn show(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Array(items) => items.iter().map(show).collect::<Vec<_>>().join(", "),
        Value::Object(object) => match object.get(UNKNOWN_KEY) {
            Some(what) if object.len() == 1 => format!("${{{}}}", show(what)),
            _ => value.to_string(),
        },
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyzer::dag::Graph;
    use crate::analyzer::diff::ResourceChange;
    use crate::state::schema::ResourceState;
    use serde_json::json;

    #[test]
    fn a_level_round_trips_and_anything_else_is_not_a_level() {
        for level in [
            RequireApproval::Never,
            RequireApproval::AnyChange,
            RequireApproval::Broadening,
        ] {
            assert_eq!(level.as_str().parse::<RequireApproval>(), Ok(level));
        }
        let err = "always".parse::<RequireApproval>().unwrap_err();
        assert_eq!(err, NotALevel("always".into()));
        assert_eq!(
            err.to_string(),
            "always is not a level: write never, any-change or broadening"
        );
    }

    fn change(id: &str, kind: &str, action: Action) -> ResourceChange {
        ResourceChange {
            logical_id: id.into(),
            resource_type: kind.into(),
            action,
            replacement: false,
            properties: Vec::new(),
            policies_only: false,
        }
    }

    fn plan(changes: Vec<ResourceChange>, properties: Vec<(&str, Value)>) -> StackPlan {
        StackPlan {
            graph: Graph::default(),
            properties: properties
                .into_iter()
                .map(|(id, p)| (id.to_string(), p.as_object().cloned().unwrap()))
                .collect(),
            changes,
            no_echo: Default::default(),
        }
    }

    fn recorded(resources: Vec<(&str, &str, Value)>) -> StackState {
        let mut state: StackState = serde_json::from_value(json!({
            "version": 9, "stackName": "S", "region": "us-east-1", "resources": {}
        }))
        .unwrap();
        for (id, kind, properties) in resources {
            state.resources.insert(
                id.into(),
                serde_json::from_value::<ResourceState>(json!({
                    "physicalId": id, "resourceType": kind, "properties": properties
                }))
                .unwrap(),
            );
        }
        state
    }

    fn trust(service: &str) -> Value {
        json!({"AssumeRolePolicyDocument": {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Service": service}}]},
            "ManagedPolicyArns": ["arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"]})
    }

    #[test]
    fn a_new_role_broadens_and_shows_its_trust_and_managed_policy() {
        let planned = plan(
            vec![change("Role", "AWS::IAM::Role", Action::Create)],
            vec![("Role", trust("lambda.amazonaws.com"))],
        );
        let changes = SecurityChanges::of(&planned, None);
        assert!(changes.broadens());
        assert_eq!(changes.statements.len(), 1);
        let (sign, statement) = &changes.statements[0];
        assert_eq!(*sign, Sign::Added);
        assert_eq!(statement.resource, "${Role.Arn}");
        assert_eq!(statement.action, "sts:AssumeRole");
        assert_eq!(statement.principal, r#"{"Service":"lambda.amazonaws.com"}"#);
        assert_eq!(changes.managed_policies.len(), 1);
        assert!(RequireApproval::Broadening.needed_for(&changes));
        assert!(!RequireApproval::Never.needed_for(&changes));
        assert_eq!(
            changes.counts(),
            "1 IAM statement added, 1 managed policy attachment added"
        );
    }

    #[test]
    fn an_unchanged_role_is_not_shown_and_a_removed_statement_does_not_broaden() {
        let before = recorded(vec![
            ("Role", "AWS::IAM::Role", trust("lambda.amazonaws.com")),
            (
                "Policy",
                "AWS::IAM::Policy",
                json!({"Roles": ["r1"], "PolicyDocument": {"Statement": [
                    {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject"], "Resource": "*"},
                    {"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "arn:q"}]}}),
            ),
        ]);
        let planned = plan(
            vec![
                change("Role", "AWS::IAM::Role", Action::NoChange),
                change("Policy", "AWS::IAM::Policy", Action::Update),
            ],
            vec![
                ("Role", trust("lambda.amazonaws.com")),
                (
                    "Policy",
                    json!({"Roles": ["r1"], "PolicyDocument": {"Statement": [
                        {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject"], "Resource": "*"}]}}),
                ),
            ],
        );
        let changes = SecurityChanges::of(&planned, Some(&before));
        assert!(!changes.broadens());
        assert_eq!(changes.statements.len(), 1);
        assert_eq!(changes.statements[0].0, Sign::Removed);
        assert_eq!(changes.statements[0].1.principal, "AWS:r1");
        assert!(RequireApproval::AnyChange.needed_for(&changes));
        assert!(!RequireApproval::Broadening.needed_for(&changes));
    }

    #[test]
    fn an_opened_port_broadens_and_reads_as_the_cdk_cli_prints_it() {
        let before = recorded(vec![(
            "Sg",
            "AWS::EC2::SecurityGroup",
            json!({"SecurityGroupEgress": [{"IpProtocol": "-1", "CidrIp": "0.0.0.0/0"}]}),
        )]);
        let planned = plan(
            vec![
                change("Sg", "AWS::EC2::SecurityGroup", Action::Update),
                change("In", "AWS::EC2::SecurityGroupIngress", Action::Create),
            ],
            vec![
                (
                    "Sg",
                    json!({"SecurityGroupEgress": [{"IpProtocol": "-1", "CidrIp": "0.0.0.0/0"}],
                        "SecurityGroupIngress": [{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "0.0.0.0/0"}]}),
                ),
                (
                    "In",
                    json!({"GroupId": "sg-1", "IpProtocol": "tcp", "FromPort": 8000, "ToPort": 8080,
                        "SourceSecurityGroupId": {UNKNOWN_KEY: "Alb.GroupId"}}),
                ),
            ],
        );
        let changes = SecurityChanges::of(&planned, Some(&before));
        assert!(changes.broadens());
        let rules: Vec<_> = changes
            .rules
            .iter()
            .map(|(s, r)| (s.mark(), r.clone()))
            .collect();
        assert_eq!(
            rules,
            vec![
                (
                    "+",
                    Rule {
                        group: "${Sg.GroupId}".into(),
                        direction: "In",
                        protocol: "TCP 443".into(),
                        peer: "0.0.0.0/0".into()
                    }
                ),
                (
                    "+",
                    Rule {
                        group: "sg-1".into(),
                        direction: "In",
                        protocol: "TCP 8000-8080".into(),
                        peer: "${Alb.GroupId}".into()
                    }
                ),
            ]
        );
    }

    #[test]
    fn resource_policies_and_lambda_permissions_are_statements() {
        let planned = plan(
            vec![
                change("Perm", "AWS::Lambda::Permission", Action::Create),
                change("Logs", "AWS::Logs::ResourcePolicy", Action::Create),
            ],
            vec![
                (
                    "Perm",
                    json!({"FunctionName": "fn", "Action": "lambda:InvokeFunction",
                        "Principal": "apigateway.amazonaws.com", "SourceArn": "arn:api"}),
                ),
                (
                    "Logs",
                    json!({"PolicyName": "p", "PolicyDocument": "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":{\"Service\":\"es.amazonaws.com\"},\"Action\":\"logs:PutLogEvents\",\"Resource\":\"arn:lg\"}]}"}),
                ),
            ],
        );
        let changes = SecurityChanges::of(&planned, None);
        assert_eq!(changes.statements.len(), 2);
        let permission = &changes
            .statements
            .iter()
            .find(|(_, s)| s.resource == "fn")
            .unwrap()
            .1;
        assert_eq!(permission.principal, "apigateway.amazonaws.com");
        assert_eq!(permission.condition, r#"{"SourceArn":"arn:api"}"#);
        assert!(changes
            .statements
            .iter()
            .any(|(_, s)| s.action == "logs:PutLogEvents"));
    }
}
