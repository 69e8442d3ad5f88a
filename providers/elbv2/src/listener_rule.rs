//! `AWS::ElasticLoadBalancingV2::ListenerRule`: physical id (and `Ref`) is the rule's ARN. A
//! priority is unique in its listener, so the run after a crash finds the rule by its
//! `Priority` in its `ListenerArn`; a create retried after a lost answer (PriorityInUse) adopts
//! the rule at that priority when it has the conditions and actions asked for.

use aws_sdk_elasticloadbalancingv2::types::{Rule, RulePriorityPair};
use cdkd_aws_common::{
    deleted_unless_failed, does_not_exist, found, int, require_str, text, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::actions::{actions, actions_shape};
use crate::conditions::{conditions, conditions_shape};
use crate::{changed, client, failed, read_tags, sdk_tags, update_tags};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ElasticLoadBalancingV2::ListenerRule";

/// The `AWS::ElasticLoadBalancingV2::ListenerRule` provider.
#[derive(Default)]
pub struct ListenerRule;

fn attributes_of(arn: &str, is_default: bool) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("RuleArn".into(), json!(arn));
    attributes.insert("IsDefault".into(), json!(is_default));
    attributes
}

/// The listener of a rule's ARN (`…:listener-rule/app/lb/id/listener/rule` ->
/// `…:listener/app/lb/id/listener`).
fn listener_of(rule_arn: &str) -> Option<String> {
    let (head, tail) = rule_arn.split_once(":listener-rule/")?;
    let (listener, _) = tail.rsplit_once('/')?;
    Some(format!("{head}:listener/{listener}"))
}

/// A live rule in template shape; `template` (the recorded properties) decides the form of
/// each condition.
fn template_shape(
    listener: &str,
    rule: &Rule,
    template: &Map<String, Value>,
) -> Map<String, Value> {
    let mut props = Map::new();
    props.insert("ListenerArn".into(), json!(listener));
    if let Some(priority) = rule.priority().and_then(|p| p.parse::<i64>().ok()) {
        props.insert("Priority".into(), json!(priority));
    }
    props.insert(
        "Conditions".into(),
        conditions_shape(rule.conditions(), template.get("Conditions")),
    );
    props.insert("Actions".into(), actions_shape(rule.actions()));
    props
}

/// The rules of `listener`, every page; `None` when the listener is gone.
async fn rules(
    elb: &aws_sdk_elasticloadbalancingv2::Client,
    what: &str,
    listener: &str,
) -> Result<Option<Vec<Rule>>, ProviderError> {
    let mut all = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let Some(page) = found(
            elb.describe_rules()
                .listener_arn(listener)
                .set_marker(marker.take())
                .send()
                .await
                .map_err(failed!(format!("{what}: DescribeRules on {listener}"))),
        )?
        else {
            return Ok(None);
        };
        all.extend(page.rules().iter().cloned());
        match page.next_marker() {
            Some(next) if !next.is_empty() => marker = Some(next.to_string()),
            _ => return Ok(Some(all)),
        }
    }
}

/// The rule at `priority` in `listener`.
async fn at_priority(
    elb: &aws_sdk_elasticloadbalancingv2::Client,
    what: &str,
    listener: &str,
    priority: i32,
) -> Result<Option<Rule>, ProviderError> {
    let wanted = priority.to_string();
    Ok(rules(elb, what, listener)
        .await?
        .unwrap_or_default()
        .into_iter()
        .find(|r| r.priority() == Some(wanted.as_str())))
}

/// Whether a live rule has the conditions and actions of `props`, compared in template shape.
fn same_rule(rule: &Rule, props: &Map<String, Value>, what: &str) -> Result<bool, ProviderError> {
    let asked_conditions = conditions(props.get("Conditions"), what)?;
    let asked_actions = actions(props.get("Actions"), what)?;
    Ok(conditions_shape(rule.conditions(), props.get("Conditions"))
        == conditions_shape(&asked_conditions, props.get("Conditions"))
        && actions_shape(rule.actions()) == actions_shape(&asked_actions))
}

#[async_trait]
impl ResourceProvider for ListenerRule {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["ListenerArn", "Priority", "Conditions", "Actions", "Tags"])
            .create_only(&["ListenerArn"])
            .read_and_import()
            .finds_created_in(&["ListenerArn", "Priority"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let listener = require_str(props, "ListenerArn", &what)?;
        let priority = int(props.get("Priority")).ok_or_else(|| {
            ProviderError::validation(format!("{what}: property Priority is required (1-50000)"))
        })?;
        let elb = client(ctx).await?;
        let created = elb
            .create_rule()
            .listener_arn(listener)
            .priority(priority)
            .set_conditions(Some(conditions(props.get("Conditions"), &what)?))
            .set_actions(Some(actions(props.get("Actions"), &what)?))
            .set_tags(sdk_tags(props))
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: CreateRule at priority {priority} on {listener}"
            )));
        let arn = match created {
            Ok(answer) => answer
                .rules()
                .first()
                .and_then(|r| r.rule_arn())
                .ok_or_else(|| ProviderError::other(format!("{what}: CreateRule returned no ARN")))?
                .to_string(),
            // An earlier attempt of this create whose answer was lost made the rule at this
            // priority; another rule there is a real conflict.
            Err(err) if err.kind == ErrorKind::ALREADY_EXISTS => {
                match at_priority(&elb, &what, listener, priority).await? {
                    Some(rule) if same_rule(&rule, props, &what)? => {
                        rule.rule_arn().unwrap_or_default().to_string()
                    }
                    _ => {
                        return Err(ProviderError::new(
                            err.kind,
                            format!("{}: another rule of listener {listener} has priority {priority}; give this rule another Priority", err.message),
                        )
                        .with_aws_code("PriorityInUse"))
                    }
                }
            }
            Err(err) => return Err(err),
        };
        Ok(CreateResult {
            attributes: attributes_of(&arn, false),
            physical_id: arn,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (before, after) = (&request.previous_properties, &request.properties);
        let arn = request.physical_id.as_str();
        let elb = client(ctx).await?;
        if changed(before, after, "Priority") {
            let priority = int(after.get("Priority")).ok_or_else(|| {
                ProviderError::validation(format!(
                    "{what}: property Priority is required (1-50000)"
                ))
            })?;
            elb.set_rule_priorities()
                .rule_priorities(
                    RulePriorityPair::builder()
                        .rule_arn(arn)
                        .priority(priority)
                        .build(),
                )
                .send()
                .await
                .map_err(failed!(format!("{what}: SetRulePriorities {arn}")))?;
        }
        if changed(before, after, "Conditions") || changed(before, after, "Actions") {
            elb.modify_rule()
                .rule_arn(arn)
                .set_conditions(Some(conditions(after.get("Conditions"), &what)?))
                .set_actions(Some(actions(after.get("Actions"), &what)?))
                .send()
                .await
                .map_err(failed!(format!("{what}: ModifyRule {arn}")))?;
        }
        update_tags(&elb, &what, arn, before, after).await?;
        Ok(UpdateResult {
            physical_id: arn.to_string(),
            attributes: attributes_of(arn, false),
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let arn = request.physical_id.as_str();
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_rule()
                .rule_arn(arn)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteRule {arn}"))),
        )
    }
}

#[async_trait]
impl Readable for ListenerRule {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let arn = request.physical_id.as_str();
        let elb = client(ctx).await?;
        let answer = found(
            elb.describe_rules()
                .rule_arns(arn)
                .send()
                .await
                .map_err(failed!(format!("{what}: DescribeRules {arn}"))),
        )?;
        let Some(rule) = answer.and_then(|a| a.rules().first().cloned()) else {
            return Ok(None);
        };
        let listener = text(request.properties.get("ListenerArn"))
            .or_else(|| listener_of(arn))
            .unwrap_or_default();
        let mut props = template_shape(&listener, &rule, &request.properties);
        cdkd_aws_common::put(&mut props, "Tags", read_tags(&elb, what, arn).await?);
        Ok(Some(props))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let answer = found(
            client(ctx)
                .await?
                .describe_rules()
                .rule_arns(physical_id)
                .send()
                .await
                .map_err(failed!(format!("{what}: DescribeRules {physical_id}"))),
        )?;
        let rule = answer
            .and_then(|a| a.rules().first().cloned())
            .ok_or_else(|| does_not_exist(what, physical_id, "ElasticLoadBalancingV2"))?;
        Ok(attributes_of(physical_id, rule.is_default() == Some(true)))
    }

    /// The rule at the template's `Priority` in its `ListenerArn`.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let (Some(listener), Some(priority)) = (
            text(request.properties.get("ListenerArn")),
            int(request.properties.get("Priority")),
        ) else {
            return Ok(None);
        };
        let elb = client(ctx).await?;
        Ok(at_priority(&elb, what, &listener, priority)
            .await?
            .and_then(|r| r.rule_arn().map(ToString::to_string)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_elasticloadbalancingv2::types::{
        Action, FixedResponseActionConfig, PathPatternConditionConfig, RuleCondition,
    };

    fn live() -> Rule {
        Rule::builder()
            .rule_arn("arn:aws:elasticloadbalancing:us-east-1:1:listener-rule/app/lb/1/l1/r1")
            .priority("10")
            .conditions(
                RuleCondition::builder()
                    .field("path-pattern")
                    .path_pattern_config(
                        PathPatternConditionConfig::builder()
                            .values("/api/*")
                            .build(),
                    )
                    .build(),
            )
            .actions(
                Action::builder()
                    .r#type("fixed-response".into())
                    .fixed_response_config(
                        FixedResponseActionConfig::builder()
                            .status_code("200")
                            .build(),
                    )
                    .build(),
            )
            .is_default(false)
            .build()
    }

    #[test]
    fn a_rule_reads_back_in_template_shape_and_knows_its_listener() {
        assert_eq!(
            listener_of("arn:aws:elasticloadbalancing:us-east-1:1:listener-rule/app/lb/1/l1/r1")
                .as_deref(),
            Some("arn:aws:elasticloadbalancing:us-east-1:1:listener/app/lb/1/l1")
        );
        let shape = template_shape("arn:l", &live(), &Map::new());
        assert_eq!(
            Value::Object(shape),
            json!({
                "ListenerArn": "arn:l",
                "Priority": 10,
                "Conditions": [{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/api/*"]}}],
                "Actions": [{"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "200"}}],
            })
        );
        assert_eq!(
            ListenerRule.schema().find_scope,
            ["ListenerArn", "Priority"]
        );
    }

    #[test]
    fn a_lost_answers_rule_is_recognised_by_its_conditions_and_actions() {
        let props = json!({
            "Conditions": [{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/api/*"]}}],
            "Actions": [{"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "200"}}],
        });
        assert!(same_rule(&live(), props.as_object().unwrap(), "R").unwrap());
        let other = json!({
            "Conditions": [{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/other"]}}],
            "Actions": props["Actions"],
        });
        assert!(!same_rule(&live(), other.as_object().unwrap(), "R").unwrap());
    }
}
