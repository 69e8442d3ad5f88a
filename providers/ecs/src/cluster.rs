//! `AWS::ECS::Cluster`: physical id (and `Ref`) is the cluster's name, the template's or one
//! generated from the create's token as CloudFormation generates it; attribute `Arn`. ECS's
//! CreateCluster answers the existing cluster for an ACTIVE name, so a create repeated after a
//! crash makes nothing twice, and the next run finds it by that name.

use std::time::Duration;

use aws_sdk_ecs::types::ClusterField;
use cdkd_aws_common::{
    deleted_unless_failed, does_not_exist, given_or_generated_name, poll, put, retry_while,
    Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::raw::{to_api, to_template, RawJson};
use crate::{changed, client, failed, members, retag, template_tags};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ECS::Cluster";

/// The longest cluster name ECS takes.
const MAX_NAME: usize = 255;

/// How long a new cluster may stay PROVISIONING (capacity providers being attached).
const ACTIVE_PATIENCE: Duration = Duration::from_secs(300);

/// How long a delete retries while the cluster still has services draining.
const DRAIN_PATIENCE: Duration = Duration::from_secs(180);

/// The `AWS::ECS::Cluster` provider.
#[derive(Default)]
pub struct Cluster;

/// The cluster named `name` as ECS answers it (settings, configuration and tags included);
/// `None` when it does not exist or is INACTIVE (deleted).
pub(crate) async fn describe(
    ecs: &aws_sdk_ecs::Client,
    what: &str,
    name: &str,
) -> Result<Option<Value>, ProviderError> {
    let raw = RawJson::new(None);
    ecs.describe_clusters()
        .clusters(name)
        .include(ClusterField::Settings)
        .include(ClusterField::Configurations)
        .include(ClusterField::Tags)
        .customize()
        .interceptor(raw.clone())
        .send()
        .await
        .map_err(failed!(format!("{what}: DescribeClusters {name}")))?;
    let answer = raw.answer(&format!("{what}: DescribeClusters {name}"))?;
    Ok(answer["clusters"]
        .as_array()
        .and_then(|c| c.first())
        .filter(|c| c["status"] != "INACTIVE")
        .cloned())
}

/// A described cluster in template shape.
fn template_shape(cluster: &Value) -> Map<String, Value> {
    let mut props = Map::new();
    put(
        &mut props,
        "ClusterName",
        cluster.get("clusterName").cloned(),
    );
    for member in [
        "settings",
        "configuration",
        "capacityProviders",
        "defaultCapacityProviderStrategy",
        "serviceConnectDefaults",
    ] {
        if let Some(value) = cluster.get(member).and_then(to_template) {
            props.insert(crate::raw::template_key(member), value);
        }
    }
    put(&mut props, "Tags", template_tags(cluster.get("tags")));
    props
}

/// `Arn` of a described cluster.
fn attributes_of(cluster: &Value) -> Map<String, Value> {
    let mut attributes = Map::new();
    put(&mut attributes, "Arn", cluster.get("clusterArn").cloned());
    attributes
}

/// Waits until the cluster is ACTIVE (a cluster with capacity providers is PROVISIONING first).
async fn until_active(
    ecs: &aws_sdk_ecs::Client,
    what: &str,
    name: &str,
) -> Result<Value, ProviderError> {
    let active = poll(ACTIVE_PATIENCE, || async {
        Ok(describe(ecs, what, name)
            .await?
            .filter(|c| c["status"] == "ACTIVE"))
    })
    .await?;
    active.ok_or_else(|| {
        ProviderError::new(
            ErrorKind::TIMEOUT,
            format!(
                "{what}: the cluster {name} was not ACTIVE after {} s (aws ecs describe-clusters --clusters {name})",
                ACTIVE_PATIENCE.as_secs()
            ),
        )
    })
}

#[async_trait]
impl ResourceProvider for Cluster {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "ClusterName",
                "ClusterSettings",
                "Configuration",
                "CapacityProviders",
                "DefaultCapacityProviderStrategy",
                "ServiceConnectDefaults",
                "Tags",
            ])
            .create_only(&["ClusterName"])
            .read_and_import()
            .finds_created_in(&["ClusterName"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = given_or_generated_name(&request, "ClusterName", MAX_NAME, false);
        let mut body = members(
            &request.properties,
            &[
                "ClusterSettings",
                "Configuration",
                "CapacityProviders",
                "DefaultCapacityProviderStrategy",
                "ServiceConnectDefaults",
                "Tags",
            ],
        );
        body.insert("clusterName".into(), json!(name));
        let ecs = client(ctx).await?;
        let raw = RawJson::new(Some(&Value::Object(body)));
        ecs.create_cluster()
            .cluster_name(&name)
            .customize()
            .interceptor(raw.clone())
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateCluster {name}")))?;
        let created = raw.answer(&format!("{what}: CreateCluster {name}"))?;
        let cluster = if created["cluster"]["status"] == "ACTIVE" {
            created["cluster"].clone()
        } else {
            until_active(&ecs, &what, &name).await?
        };
        Ok(CreateResult {
            physical_id: name,
            attributes: attributes_of(&cluster),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (before, after, name) = (
            &request.previous_properties,
            &request.properties,
            request.physical_id.as_str(),
        );
        let ecs = client(ctx).await?;
        let mut update = Map::new();
        // UpdateCluster keeps what it is not sent: a dropped setting is sent as its off value.
        if changed(before, after, "ClusterSettings") {
            update.insert(
                "settings".into(),
                after
                    .get("ClusterSettings")
                    .map(to_api)
                    .unwrap_or_else(|| json!([{"name": "containerInsights", "value": "disabled"}])),
            );
        }
        if changed(before, after, "Configuration") {
            update.insert(
                "configuration".into(),
                after
                    .get("Configuration")
                    .map(to_api)
                    .unwrap_or_else(|| json!({})),
            );
        }
        if changed(before, after, "ServiceConnectDefaults") {
            update.insert(
                "serviceConnectDefaults".into(),
                after
                    .get("ServiceConnectDefaults")
                    .map(to_api)
                    .unwrap_or_else(|| json!({"namespace": ""})),
            );
        }
        if !update.is_empty() {
            update.insert("cluster".into(), json!(name));
            let raw = RawJson::new(Some(&Value::Object(update)));
            ecs.update_cluster()
                .cluster(name)
                .customize()
                .interceptor(raw)
                .send()
                .await
                .map_err(failed!(format!("{what}: UpdateCluster {name}")))?;
        }
        if changed(before, after, "CapacityProviders")
            || changed(before, after, "DefaultCapacityProviderStrategy")
        {
            crate::capacity_associations::put(
                &ecs,
                &what,
                name,
                after.get("CapacityProviders"),
                after.get("DefaultCapacityProviderStrategy"),
            )
            .await?;
        }
        let cluster = describe(&ecs, &what, name)
            .await?
            .ok_or_else(|| does_not_exist(&what, name, "ECS"))?;
        let arn = cluster["clusterArn"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        retag(&ecs, &what, &arn, before, after).await?;
        Ok(UpdateResult {
            physical_id: name.to_string(),
            attributes: attributes_of(&cluster),
            ..Default::default()
        })
    }

    /// ECS refuses while services are still draining (deleted, their tasks stopping): the
    /// delete is tried again for a while, as CloudFormation's handler does.
    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = request.physical_id.as_str();
        let ecs = client(ctx).await?;
        let result = retry_while(
            Duration::from_secs(1),
            DRAIN_PATIENCE,
            |err: &ProviderError, pause| {
                let retry = err.aws_code() == Some("ClusterContainsServicesException")
                    || err.aws_code() == Some("ClusterContainsTasksException");
                if retry {
                    tracing::info!(
                        "{what}: services or tasks still draining; trying again in {pause:?}"
                    );
                }
                retry
            },
            || async {
                ecs.delete_cluster()
                    .cluster(name)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(failed!(format!("{what}: DeleteCluster {name}")))
            },
        )
        .await;
        deleted_unless_failed(result)
    }
}

#[async_trait]
impl Readable for Cluster {
    const CREATED_NAME: Option<(Option<&'static str>, usize)> =
        Some((Some("ClusterName"), MAX_NAME));

    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ecs = client(ctx).await?;
        Ok(describe(&ecs, what, &request.physical_id)
            .await?
            .map(|c| template_shape(&c)))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let ecs = client(ctx).await?;
        let cluster = describe(&ecs, what, physical_id)
            .await?
            .ok_or_else(|| does_not_exist(what, physical_id, "ECS"))?;
        Ok(attributes_of(&cluster))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_described_cluster_reads_back_in_template_shape() {
        let cluster = json!({
            "clusterArn": "arn:aws:ecs:us-east-1:1:cluster/shop",
            "clusterName": "shop",
            "status": "ACTIVE",
            "settings": [{"name": "containerInsights", "value": "enabled"}],
            "capacityProviders": ["FARGATE"],
            "defaultCapacityProviderStrategy": [],
            "tags": [{"key": "team", "value": "a"}, {"key": "cdkd:create-token", "value": "t"}],
            "runningTasksCount": 0,
        });
        assert_eq!(
            Value::Object(template_shape(&cluster)),
            json!({
                "ClusterName": "shop",
                "ClusterSettings": [{"Name": "containerInsights", "Value": "enabled"}],
                "CapacityProviders": ["FARGATE"],
                "Tags": [{"Key": "team", "Value": "a"}],
            })
        );
        assert_eq!(
            Value::Object(attributes_of(&cluster)),
            json!({"Arn": "arn:aws:ecs:us-east-1:1:cluster/shop"})
        );
    }
}
