//! `AWS::ECS::ClusterCapacityProviderAssociations`: the capacity providers of a cluster and its
//! default strategy (PutClusterCapacityProviders, which sets both whole: a create repeated after
//! a crash sets the same again). Physical id (and `Ref`) is the cluster's name; the delete
//! leaves the cluster with none, as CloudFormation's does.

use cdkd_aws_common::{deleted_unless_failed, put as put_key, require_str, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::raw::{to_api, to_template, RawJson};
use crate::{client, failed, last_part};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ECS::ClusterCapacityProviderAssociations";

/// The `AWS::ECS::ClusterCapacityProviderAssociations` provider.
#[derive(Default)]
pub struct CapacityAssociations;

/// Sets the cluster's capacity providers and default strategy (none when absent).
pub(crate) async fn put(
    ecs: &aws_sdk_ecs::Client,
    what: &str,
    cluster: &str,
    providers: Option<&Value>,
    strategy: Option<&Value>,
) -> Result<(), ProviderError> {
    let body = json!({
        "cluster": cluster,
        "capacityProviders": providers.map(to_api).unwrap_or_else(|| json!([])),
        "defaultCapacityProviderStrategy": strategy.map(to_api).unwrap_or_else(|| json!([])),
    });
    let raw = RawJson::new(Some(&body));
    ecs.put_cluster_capacity_providers()
        .cluster(cluster)
        .customize()
        .interceptor(raw)
        .send()
        .await
        .map(|_| ())
        .map_err(failed!(format!(
            "{what}: PutClusterCapacityProviders {cluster}"
        )))
}

#[async_trait]
impl ResourceProvider for CapacityAssociations {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "Cluster",
                "CapacityProviders",
                "DefaultCapacityProviderStrategy",
            ])
            .create_only(&["Cluster"])
            .read_and_import()
            .operations(&[operation::IDEMPOTENT_CREATE])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let cluster = last_part(require_str(props, "Cluster", &what)?).to_string();
        let ecs = client(ctx).await?;
        put(
            &ecs,
            &what,
            &cluster,
            props.get("CapacityProviders"),
            props.get("DefaultCapacityProviderStrategy"),
        )
        .await?;
        Ok(CreateResult {
            physical_id: cluster,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let ecs = client(ctx).await?;
        put(
            &ecs,
            &what,
            &request.physical_id,
            props.get("CapacityProviders"),
            props.get("DefaultCapacityProviderStrategy"),
        )
        .await?;
        Ok(UpdateResult {
            physical_id: request.physical_id,
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let ecs = client(ctx).await?;
        deleted_unless_failed(put(&ecs, &what, &request.physical_id, None, None).await)
    }
}

#[async_trait]
impl Readable for CapacityAssociations {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ecs = client(ctx).await?;
        let Some(cluster) = crate::cluster::describe(&ecs, what, &request.physical_id).await?
        else {
            return Ok(None);
        };
        let mut props = Map::new();
        put_key(&mut props, "Cluster", cluster.get("clusterName").cloned());
        props.insert(
            "CapacityProviders".into(),
            cluster
                .get("capacityProviders")
                .and_then(to_template)
                .unwrap_or_else(|| json!([])),
        );
        props.insert(
            "DefaultCapacityProviderStrategy".into(),
            cluster
                .get("defaultCapacityProviderStrategy")
                .and_then(to_template)
                .unwrap_or_else(|| json!([])),
        );
        Ok(Some(props))
    }
}
