//! `AWS::ECS::Service`: physical id (and `Ref`) is the service's ARN; attributes `Name` and
//! `ServiceArn`. The create sends ECS's `clientToken` (derived from cdkd's create token), so a
//! retried create answers the first one's service, and names the service (the template's name,
//! or one generated from the token as CloudFormation generates it), so the run after a crash
//! finds it by name in its cluster. The create waits until the service is ACTIVE, which is what
//! a dependent needs; not for steady state (its tasks running, ~65 s on AWS). The delete scales
//! the service to 0, deletes it and waits until it is INACTIVE (its tasks drained), as
//! CloudFormation does.

use std::time::Duration;

use aws_sdk_ecs::types::ServiceField;
use cdkd_aws_common::{
    created_name, deleted_unless_failed, does_not_exist, found, given_or_generated_name, poll, put,
    stable_hash, while_iam_propagates, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult, Wait,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::raw::{template_key, to_api, to_template, RawJson};
use crate::{changed, client, failed, last_part, members, retag, template_tags};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ECS::Service";

/// The longest service name ECS takes.
const MAX_NAME: usize = 255;

/// How long a new service may take to become ACTIVE.
const ACTIVE_PATIENCE: Duration = Duration::from_secs(300);
/// How long `--wait full` waits for steady state unless `--resource-timeout` says otherwise.
const STEADY_PATIENCE: Duration = Duration::from_secs(30 * 60);

/// How long a deleted service may take to drain its tasks and become INACTIVE.
const DRAIN_PATIENCE: Duration = Duration::from_secs(900);

/// What UpdateService changes in place.
const UPDATABLE: &[&str] = &[
    "AvailabilityZoneRebalancing",
    "CapacityProviderStrategy",
    "DeploymentConfiguration",
    "DeploymentController",
    "DesiredCount",
    "EnableECSManagedTags",
    "EnableExecuteCommand",
    "GatewayConnectors",
    "HealthCheckGracePeriodSeconds",
    "LoadBalancers",
    "Monitoring",
    "NetworkConfiguration",
    "PlacementConstraints",
    "PlacementStrategies",
    "PlatformVersion",
    "PropagateTags",
    "ServiceConnectConfiguration",
    "ServiceRegistries",
    "TaskDefinition",
    "VolumeConfigurations",
    "VpcLatticeConfigurations",
];

/// What only a create sets (beside the cluster and the name); a change replaces the service.
const CREATE_ONLY: &[&str] = &[
    "Cluster",
    "LaunchType",
    "Role",
    "SchedulingStrategy",
    "ServiceName",
];

/// Lists UpdateService empties when sent `[]` (it keeps what it is not sent).
const LISTS: &[&str] = &[
    "CapacityProviderStrategy",
    "LoadBalancers",
    "PlacementConstraints",
    "PlacementStrategies",
    "ServiceRegistries",
    "VolumeConfigurations",
    "VpcLatticeConfigurations",
];

/// The `AWS::ECS::Service` provider.
#[derive(Default)]
pub struct Service;

/// ECS's `clientToken` (at most 36 characters) for cdkd's create token: the same for every
/// attempt of one create.
fn client_token(token: &str) -> String {
    format!(
        "{:016x}{:016x}",
        stable_hash(&[token]),
        stable_hash(&[token, "ecs-service"])
    )
}

/// The cluster a service lives in: from its ARN (`service/<cluster>/<name>`), else the
/// template's `Cluster`, else ECS's `default`.
fn cluster_of(arn: &str, properties: &Map<String, Value>) -> String {
    if let Some((_, path)) = arn.split_once(":service/") {
        if let Some((cluster, _)) = path.split_once('/') {
            return cluster.to_string();
        }
    }
    properties
        .get("Cluster")
        .and_then(Value::as_str)
        .map(|c| last_part(c).to_string())
        .unwrap_or_else(|| "default".into())
}

/// The CreateService body of a template.
fn create_body(properties: &Map<String, Value>, cluster: &str, name: &str, token: &str) -> Value {
    let mut keys: Vec<&str> = UPDATABLE.to_vec();
    keys.extend(["LaunchType", "Role", "SchedulingStrategy", "Tags"]);
    let mut body = members(properties, &keys);
    body.insert("cluster".into(), json!(cluster));
    body.insert("serviceName".into(), json!(name));
    if !token.is_empty() {
        body.insert("clientToken".into(), json!(client_token(token)));
    }
    // CloudFormation's default for a replica service without a desired count.
    let daemon = properties.get("SchedulingStrategy").and_then(Value::as_str) == Some("DAEMON");
    if !daemon && !body.contains_key("desiredCount") {
        body.insert("desiredCount".into(), json!(1));
    }
    Value::Object(body)
}

/// The UpdateService body of a change from `before` to `after`; `None` when nothing it sets
/// changed. A dropped list is sent empty; a dropped setting is left as it is, as under
/// CloudFormation.
fn update_body(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
    cluster: &str,
    arn: &str,
) -> Option<Value> {
    let mut body = Map::new();
    for key in UPDATABLE {
        if !changed(before, after, key) {
            continue;
        }
        match after.get(*key).filter(|v| !v.is_null()) {
            Some(value) => {
                body.insert(crate::raw::api_key(key), to_api(value));
            }
            None if LISTS.contains(key) => {
                body.insert(crate::raw::api_key(key), json!([]));
            }
            None => {}
        }
    }
    let forced = after
        .get("ForceNewDeployment")
        .and_then(|f| f.get("EnableForceNewDeployment"))
        .and_then(|v| cdkd_aws_common::flag(Some(v)))
        == Some(true);
    if forced && changed(before, after, "ForceNewDeployment") {
        body.insert("forceNewDeployment".into(), json!(true));
    }
    if body.is_empty() {
        return None;
    }
    body.insert("cluster".into(), json!(cluster));
    body.insert("service".into(), json!(arn));
    Some(Value::Object(body))
}

/// The service `name_or_arn` in `cluster` as ECS answers it (tags included); `None` when ECS
/// does not know it.
async fn describe(
    ecs: &aws_sdk_ecs::Client,
    what: &str,
    cluster: &str,
    name_or_arn: &str,
) -> Result<Option<Value>, ProviderError> {
    let raw = RawJson::new(None);
    let sent = ecs
        .describe_services()
        .cluster(cluster)
        .services(name_or_arn)
        .include(ServiceField::Tags)
        .customize()
        .interceptor(raw.clone())
        .send()
        .await
        .map_err(failed!(format!("{what}: DescribeServices {name_or_arn}")));
    // A missing cluster holds no service.
    if found(sent)?.is_none() {
        return Ok(None);
    }
    let answer = raw.answer(&format!("{what}: DescribeServices {name_or_arn}"))?;
    Ok(answer["services"]
        .as_array()
        .and_then(|s| s.first())
        .cloned())
}

/// A described service in template shape; `None` once it is INACTIVE (deleted).
fn template_shape(service: &Value) -> Option<Map<String, Value>> {
    if service["status"] == "INACTIVE" {
        return None;
    }
    let mut props = Map::new();
    put(
        &mut props,
        "Cluster",
        service["clusterArn"].as_str().map(|a| json!(last_part(a))),
    );
    put(
        &mut props,
        "ServiceName",
        service.get("serviceName").cloned(),
    );
    put(&mut props, "Role", service.get("roleArn").cloned());
    for member in [
        "taskDefinition",
        "desiredCount",
        "launchType",
        "platformVersion",
        "loadBalancers",
        "networkConfiguration",
        "deploymentConfiguration",
        "deploymentController",
        "placementConstraints",
        "placementStrategy",
        "capacityProviderStrategy",
        "schedulingStrategy",
        "serviceRegistries",
        "healthCheckGracePeriodSeconds",
        "enableECSManagedTags",
        "enableExecuteCommand",
        "propagateTags",
        "availabilityZoneRebalancing",
    ] {
        if let Some(value) = service.get(member).and_then(to_template) {
            props.insert(template_key(member), value);
        }
    }
    put(&mut props, "Tags", template_tags(service.get("tags")));
    Some(props)
}

/// `Name` and `ServiceArn` of a described service.
fn attributes_of(service: &Value) -> Map<String, Value> {
    let mut attributes = Map::new();
    put(&mut attributes, "Name", service.get("serviceName").cloned());
    put(
        &mut attributes,
        "ServiceArn",
        service.get("serviceArn").cloned(),
    );
    attributes
}

/// Waits until the service's status is `wanted` (`None`: until ECS no longer knows it or it is
/// INACTIVE); the last description answered.
async fn until(
    ecs: &aws_sdk_ecs::Client,
    what: &str,
    cluster: &str,
    arn: &str,
    wanted: Option<&str>,
    patience: Duration,
) -> Result<Option<Value>, ProviderError> {
    let reached = poll(patience, || async {
        let service = describe(ecs, what, cluster, arn).await?;
        let status = service
            .as_ref()
            .and_then(|s| s["status"].as_str())
            .unwrap_or("INACTIVE")
            .to_string();
        Ok(match wanted {
            Some(wanted) if status == wanted => Some(service),
            None if status == "INACTIVE" => Some(service),
            _ => None,
        })
    })
    .await?;
    reached.ok_or_else(|| {
        ProviderError::new(
            ErrorKind::TIMEOUT,
            format!(
                "{what}: the service {arn} was not {} after {} s (aws ecs describe-services --cluster {cluster} --services {arn})",
                wanted.unwrap_or("INACTIVE"),
                patience.as_secs()
            ),
        )
    })
}

/// Under `--wait full`, waits until the service is in steady state, as CloudFormation waits:
/// one deployment, its rollout `COMPLETED`, as many tasks running as desired (about 65 s on
/// AWS). By default its dependents need only the service, which is `ACTIVE`.
async fn steady(
    ctx: &PluginContext,
    ecs: &aws_sdk_ecs::Client,
    what: &str,
    cluster: &str,
    arn: &str,
) -> Result<(), ProviderError> {
    let patience = ctx.resource_timeout().unwrap_or(STEADY_PATIENCE);
    let reached = poll(patience, || async {
        let Some(service) = describe(ecs, what, cluster, arn).await? else {
            return Err(does_not_exist(what, arn, "ECS"));
        };
        let deployments = service["deployments"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if let Some(failed) = deployments.iter().find(|d| d["rolloutState"] == "FAILED") {
            return Err(ProviderError::other(format!(
                "{what}: the deployment of {arn} failed: {}",
                failed["rolloutStateReason"]
                    .as_str()
                    .unwrap_or("no reason given")
            )));
        }
        let settled = deployments.len() == 1
            && deployments[0]["rolloutState"]
                .as_str()
                .is_none_or(|s| s == "COMPLETED")
            && service["runningCount"] == service["desiredCount"];
        Ok(settled.then_some(()))
    })
    .await?;
    reached.ok_or_else(|| {
        ProviderError::new(
            ErrorKind::TIMEOUT,
            format!(
                "{what}: the service {arn} did not reach steady state within {} s (--wait full); it exists: deploy again without --wait full to record it (aws ecs describe-services --cluster {cluster} --services {arn})",
                patience.as_secs()
            ),
        )
    })
}

/// Whether ECS refused a service because it cannot use its role yet: "Unable to assume role
/// and validate the specified targetGroupArn. Please verify that the ECS service role being
/// passed has the proper permissions", "Unable to assume the service linked role".
fn role_not_ready(err: &ProviderError) -> bool {
    err.message
        .contains("ECS service role being passed has the proper permissions")
        || err
            .message
            .contains("Unable to assume the service linked role")
}

#[async_trait]
impl ResourceProvider for Service {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(UPDATABLE)
            .handles(CREATE_ONLY)
            .handles(&["ForceNewDeployment", "Tags"])
            .create_only(CREATE_ONLY)
            .read_and_import()
            .finds_created_in(&["Cluster", "ServiceName"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = given_or_generated_name(&request, "ServiceName", MAX_NAME, false);
        let cluster = cluster_of("", &request.properties);
        let body = create_body(&request.properties, &cluster, &name, &request.client_token);
        let ecs = client(ctx).await?;
        let raw = RawJson::new(Some(&body));
        // ECS checks the load balancer against the service's role (or its service-linked
        // role, made on first use): a role of the same run is refused until IAM has
        // propagated it. The client token makes a repeated CreateService the same service.
        let role = match request.properties.get("Role").and_then(Value::as_str) {
            Some(role) => format!("the role {role}"),
            None => "the ECS service-linked role".to_string(),
        };
        while_iam_propagates(&role, role_not_ready, || async {
            ecs.create_service()
                .service_name(&name)
                .customize()
                .interceptor(raw.clone())
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!(
                    "{what}: CreateService {name} in {cluster}"
                )))
        })
        .await?;
        let created = raw.answer(&format!("{what}: CreateService {name}"))?;
        let arn = created["service"]["serviceArn"]
            .as_str()
            .ok_or_else(|| {
                ProviderError::other(format!("{what}: CreateService returned no serviceArn"))
            })?
            .to_string();
        let service = if created["service"]["status"] == "ACTIVE" {
            created["service"].clone()
        } else {
            until(&ecs, &what, &cluster, &arn, Some("ACTIVE"), ACTIVE_PATIENCE)
                .await?
                .unwrap_or_else(|| created["service"].clone())
        };
        if ctx.wait() == Wait::Full {
            steady(ctx, &ecs, &what, &cluster, &arn).await?;
        }
        Ok(CreateResult {
            physical_id: arn,
            attributes: attributes_of(&service),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (before, after, arn) = (
            &request.previous_properties,
            &request.properties,
            request.physical_id.as_str(),
        );
        let cluster = cluster_of(arn, after);
        let ecs = client(ctx).await?;
        if let Some(body) = update_body(before, after, &cluster, arn) {
            let raw = RawJson::new(Some(&body));
            ecs.update_service()
                .service(arn)
                .customize()
                .interceptor(raw)
                .send()
                .await
                .map_err(failed!(format!("{what}: UpdateService {arn}")))?;
        }
        retag(&ecs, &what, arn, before, after).await?;
        let service = describe(&ecs, &what, &cluster, arn)
            .await?
            .filter(|s| s["status"] != "INACTIVE")
            .ok_or_else(|| does_not_exist(&what, arn, "ECS"))?;
        Ok(UpdateResult {
            physical_id: arn.to_string(),
            attributes: attributes_of(&service),
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
        let cluster = cluster_of(arn, &request.properties);
        let ecs = client(ctx).await?;
        let Some(service) = describe(&ecs, &what, &cluster, arn).await? else {
            return Ok(DeleteResult::Deleted);
        };
        match service["status"].as_str() {
            Some("INACTIVE") => return Ok(DeleteResult::Deleted),
            Some("ACTIVE") => {
                // ECS refuses to delete a replica service scaled above 0.
                let replica = service["schedulingStrategy"] != "DAEMON";
                if replica && service["desiredCount"].as_i64().unwrap_or(0) > 0 {
                    let body = json!({"cluster": cluster, "service": arn, "desiredCount": 0});
                    let raw = RawJson::new(Some(&body));
                    ecs.update_service()
                        .service(arn)
                        .customize()
                        .interceptor(raw)
                        .send()
                        .await
                        .map_err(failed!(format!(
                            "{what}: UpdateService {arn} (desired count 0)"
                        )))?;
                }
                let deleted = ecs
                    .delete_service()
                    .cluster(&cluster)
                    .service(arn)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(failed!(format!("{what}: DeleteService {arn}")));
                deleted_unless_failed(deleted)?;
            }
            // DRAINING: deleted already, its tasks stopping.
            _ => {}
        }
        until(&ecs, &what, &cluster, arn, None, DRAIN_PATIENCE).await?;
        Ok(DeleteResult::Deleted)
    }
}

#[async_trait]
impl Readable for Service {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ecs = client(ctx).await?;
        let cluster = cluster_of(&request.physical_id, &request.properties);
        let Some(service) = describe(&ecs, what, &cluster, &request.physical_id).await? else {
            return Ok(None);
        };
        let Some(mut props) = template_shape(&service) else {
            return Ok(None);
        };
        // Not settings of the service but instructions to a deployment: the template's stand.
        put(
            &mut props,
            "ForceNewDeployment",
            request.properties.get("ForceNewDeployment").cloned(),
        );
        Ok(Some(props))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let ecs = client(ctx).await?;
        let cluster = cluster_of(physical_id, &Map::new());
        let service = describe(&ecs, what, &cluster, physical_id)
            .await?
            .filter(|s| s["status"] != "INACTIVE")
            .ok_or_else(|| does_not_exist(what, physical_id, "ECS"))?;
        Ok(attributes_of(&service))
    }

    /// The ACTIVE service of the create's name (the template's, or the one generated from the
    /// token) in the template's cluster.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let Some(name) = created_name(request, Some("ServiceName"), MAX_NAME, false) else {
            return Ok(None);
        };
        let cluster = cluster_of("", &request.properties);
        let ecs = client(ctx).await?;
        Ok(describe(&ecs, what, &cluster, &name)
            .await?
            .filter(|s| s["status"] == "ACTIVE")
            .and_then(|s| s["serviceArn"].as_str().map(ToString::to_string)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn the_client_token_fits_ecs_and_is_fixed_by_cdkds_token() {
        let token = client_token("cdkd-0123456789abcdef-0123456789abcdef");
        assert_eq!(token.len(), 32);
        assert_eq!(
            token,
            client_token("cdkd-0123456789abcdef-0123456789abcdef")
        );
        assert_ne!(token, client_token("cdkd-other"));
    }

    #[test]
    fn the_cluster_comes_from_the_arn_or_the_template() {
        let none = Map::new();
        assert_eq!(
            cluster_of("arn:aws:ecs:us-east-1:1:service/shop/web", &none),
            "shop"
        );
        let template = props(json!({"Cluster": "arn:aws:ecs:us-east-1:1:cluster/shop"}));
        assert_eq!(
            cluster_of("arn:aws:ecs:us-east-1:1:service/web", &template),
            "shop"
        );
        assert_eq!(cluster_of("", &none), "default");
    }

    #[test]
    fn the_create_body_is_the_template_in_ecs_casing() {
        let template = props(json!({
            "Cluster": "shop",
            "LaunchType": "FARGATE",
            "TaskDefinition": "arn:td:1",
            "LoadBalancers": [{"ContainerName": "web", "ContainerPort": 80, "TargetGroupArn": "arn:tg"}],
            "NetworkConfiguration": {"AwsvpcConfiguration": {"AssignPublicIp": "DISABLED", "Subnets": ["s1"]}},
            "DeploymentConfiguration": {"DeploymentCircuitBreaker": {"Enable": true, "Rollback": true}, "MaximumPercent": 200},
            "PlacementStrategies": [{"Type": "spread", "Field": "attribute:ecs.availability-zone"}],
            "EnableECSManagedTags": false,
            "ForceNewDeployment": {"EnableForceNewDeployment": true},
            "Tags": [{"Key": "team", "Value": "a"}],
        }));
        let body = create_body(&template, "shop", "web", "t1");
        assert_eq!(body["desiredCount"], json!(1));
        assert_eq!(body["clientToken"], json!(client_token("t1")));
        assert_eq!(body["loadBalancers"][0]["targetGroupArn"], "arn:tg");
        assert_eq!(
            body["networkConfiguration"]["awsvpcConfiguration"]["subnets"],
            json!(["s1"])
        );
        assert_eq!(
            body["deploymentConfiguration"]["deploymentCircuitBreaker"]["rollback"],
            json!(true)
        );
        assert_eq!(body["placementStrategy"][0]["type"], "spread");
        assert_eq!(body["enableECSManagedTags"], json!(false));
        assert_eq!(body["tags"], json!([{"key": "team", "value": "a"}]));
        assert!(body.get("forceNewDeployment").is_none());
        assert!(body.get("cluster").is_some() && body.get("serviceName").is_some());
    }

    #[test]
    fn an_update_sends_what_changed_and_empties_dropped_lists() {
        let before = props(
            json!({"DesiredCount": 1, "TaskDefinition": "td:1", "ServiceRegistries": [{"RegistryArn": "r"}]}),
        );
        let after = props(json!({"DesiredCount": 3, "TaskDefinition": "td:1"}));
        let body = update_body(&before, &after, "shop", "arn:svc").unwrap();
        assert_eq!(
            body,
            json!({"desiredCount": 3, "serviceRegistries": [], "cluster": "shop", "service": "arn:svc"})
        );
        assert!(update_body(&after, &after, "shop", "arn:svc").is_none());
        let forced = props(
            json!({"DesiredCount": 3, "TaskDefinition": "td:1", "ForceNewDeployment": {"EnableForceNewDeployment": true, "ForceNewDeploymentNonce": "2"}}),
        );
        assert_eq!(
            update_body(&after, &forced, "shop", "arn:svc").unwrap()["forceNewDeployment"],
            json!(true)
        );
    }

    #[test]
    fn a_described_service_reads_back_and_an_inactive_one_is_gone() {
        let service = json!({
            "serviceArn": "arn:aws:ecs:us-east-1:1:service/shop/web",
            "serviceName": "web",
            "clusterArn": "arn:aws:ecs:us-east-1:1:cluster/shop",
            "status": "ACTIVE",
            "desiredCount": 2,
            "runningCount": 0,
            "taskDefinition": "arn:td:1",
            "launchType": "FARGATE",
            "placementStrategy": [],
            "deployments": [{"id": "d"}],
            "tags": [{"key": "team", "value": "a"}],
        });
        assert_eq!(
            Value::Object(template_shape(&service).unwrap()),
            json!({
                "Cluster": "shop",
                "ServiceName": "web",
                "TaskDefinition": "arn:td:1",
                "DesiredCount": 2,
                "LaunchType": "FARGATE",
                "Tags": [{"Key": "team", "Value": "a"}],
            })
        );
        assert_eq!(
            Value::Object(attributes_of(&service)),
            json!({"Name": "web", "ServiceArn": "arn:aws:ecs:us-east-1:1:service/shop/web"})
        );
        let mut gone = service.clone();
        gone["status"] = json!("INACTIVE");
        assert!(template_shape(&gone).is_none());
    }
}
