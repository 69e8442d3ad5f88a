//! `AWS::CloudWatch::Dashboard`: physical id (and `Ref`) is the dashboard name; no attributes.
//! A create and an update are both one PutDashboard with the whole body; tags go with the
//! create's PutDashboard (CloudWatch ignores them on an existing dashboard), later changes
//! through TagResource/UntagResource by the dashboard's ARN. A create tags the dashboard with
//! the create token, so `find_created` finds a generated name after a crash (ListDashboards,
//! then each candidate's tags).

use aws_sdk_cloudwatch::operation::get_dashboard::GetDashboardOutput;
use aws_sdk_cloudwatch::types::Tag;
use cdkd_aws_common::{
    deleted_unless_failed, does_not_exist, given_or_generated_name, put, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{
    client, create_tags, cw_error, find_created, found, live_tags, refuse_existing, template_tags,
    update_tags, Listing,
};

/// The CloudFormation type name.
const TYPE: &str = "AWS::CloudWatch::Dashboard";

/// The longest dashboard name CloudWatch takes.
const MAX_NAME: usize = 255;

/// The `AWS::CloudWatch::Dashboard` provider.
#[derive(Default)]
pub struct Dashboard;

/// The template's `DashboardBody` as CloudWatch takes it: JSON text (a template may also write
/// the object itself).
fn body_text(properties: &Map<String, Value>, what: &str) -> Result<String, ProviderError> {
    match properties.get("DashboardBody") {
        Some(Value::String(text)) => Ok(text.clone()),
        Some(other @ Value::Object(_)) => Ok(other.to_string()),
        _ => Err(ProviderError::validation(format!(
            "{what}: property DashboardBody is required and must be a JSON string"
        ))),
    }
}

/// The live body as the template's string: the template's own text when it says the same
/// JSON (so formatting is no drift), else CloudWatch's text.
fn body_shape(live: &str, template: Option<&Value>) -> Value {
    let parsed = |text: &str| serde_json::from_str::<Value>(text).ok();
    if let Some(given) = template.and_then(Value::as_str) {
        if parsed(given).is_some() && parsed(given) == parsed(live) {
            return json!(given);
        }
    }
    json!(live)
}

/// A live dashboard in template shape.
fn template_shape(
    dashboard: &GetDashboardOutput,
    tags: &[Tag],
    template: &Map<String, Value>,
) -> Map<String, Value> {
    let mut props = Map::new();
    put(
        &mut props,
        "DashboardName",
        dashboard.dashboard_name().map(|v| json!(v)),
    );
    put(
        &mut props,
        "DashboardBody",
        dashboard
            .dashboard_body()
            .map(|body| body_shape(body, template.get("DashboardBody"))),
    );
    put(&mut props, "Tags", template_tags(tags));
    props
}

/// The live dashboard named `name`; `None` when there is none.
async fn get(
    cw: &aws_sdk_cloudwatch::Client,
    what: &str,
    name: &str,
) -> Result<Option<GetDashboardOutput>, ProviderError> {
    found(
        cw.get_dashboard()
            .dashboard_name(name)
            .send()
            .await
            .map_err(cw_error!(what, format!("GetDashboard {name}"))),
    )
}

/// Puts the dashboard `name` with `body`; `tags` only on a create. CloudWatch's warnings about
/// the body (a widget it cannot draw) do not fail the call: they are logged.
async fn put_dashboard(
    cw: &aws_sdk_cloudwatch::Client,
    what: &str,
    name: &str,
    body: &str,
    tags: Vec<Tag>,
) -> Result<(), ProviderError> {
    let answer = cw
        .put_dashboard()
        .dashboard_name(name)
        .dashboard_body(body)
        .set_tags(Some(tags).filter(|t| !t.is_empty()))
        .send()
        .await
        .map_err(cw_error!(what, format!("PutDashboard {name}")))?;
    for message in answer.dashboard_validation_messages() {
        tracing::warn!(
            data_path = message.data_path().unwrap_or_default(),
            "{what}: PutDashboard {name}: {}",
            message.message().unwrap_or_default()
        );
    }
    Ok(())
}

#[async_trait]
impl ResourceProvider for Dashboard {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["DashboardName", "DashboardBody", "Tags"])
            .create_only(&["DashboardName"])
            .read_and_import()
            .operations(&[operation::FIND_CREATED])
            .build()
    }

    /// `find_created`: the dashboard a create with the request's token made.
    async fn invoke_other(
        &self,
        ctx: &PluginContext,
        name: &str,
        request: Value,
    ) -> Result<Value, ProviderError> {
        find_created(
            self,
            ctx,
            TYPE,
            "DashboardName",
            Listing::Dashboards,
            name,
            request,
        )
        .await
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = given_or_generated_name(&request, "DashboardName", MAX_NAME, false);
        let body = body_text(&request.properties, &what)?;
        let tags = create_tags(&request.properties, &request.client_token);
        let cw = client(ctx).await?;
        let existing = get(&cw, &what, &name)
            .await?
            .map(|d| d.dashboard_arn.unwrap_or_default());
        refuse_existing(&cw, &what, &name, existing, &request.client_token).await?;
        put_dashboard(&cw, &what, &name, &body, tags).await?;
        Ok(CreateResult {
            physical_id: name,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = request.physical_id.as_str();
        let body = body_text(&request.properties, &what)?;
        let cw = client(ctx).await?;
        put_dashboard(&cw, &what, name, &body, Vec::new()).await?;
        let (before, after) = (&request.previous_properties, &request.properties);
        if crate::tag_map(before) != crate::tag_map(after) {
            let arn = get(&cw, &what, name)
                .await?
                .and_then(|d| d.dashboard_arn)
                .ok_or_else(|| does_not_exist(&what, name, "CloudWatch"))?;
            update_tags(&cw, &what, &arn, before, after).await?;
        }
        Ok(UpdateResult {
            physical_id: name.to_string(),
            replaced: false,
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = request.physical_id.as_str();
        let cw = client(ctx).await?;
        deleted_unless_failed(
            cw.delete_dashboards()
                .dashboard_names(name)
                .send()
                .await
                .map(|_| ())
                .map_err(cw_error!(what, format!("DeleteDashboards {name}"))),
        )
    }
}

#[async_trait]
impl Readable for Dashboard {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let cw = client(ctx).await?;
        let Some(dashboard) = get(&cw, what, &request.physical_id).await? else {
            return Ok(None);
        };
        let tags = match dashboard.dashboard_arn() {
            Some(arn) => live_tags(&cw, what, arn).await?.unwrap_or_default(),
            None => Vec::new(),
        };
        Ok(Some(template_shape(&dashboard, &tags, &request.properties)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdkd_provider_api::protocol::CREATE_TOKEN_TAG;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn the_body_goes_as_json_text() {
        let text = props(json!({"DashboardBody": "{\"widgets\":[]}"}));
        assert_eq!(body_text(&text, "T L").unwrap(), "{\"widgets\":[]}");
        let object = props(json!({"DashboardBody": {"widgets": []}}));
        assert_eq!(body_text(&object, "T L").unwrap(), "{\"widgets\":[]}");
        let err = body_text(&Map::new(), "T L").unwrap_err();
        assert!(err.message.contains("T L"), "{}", err.message);
        assert!(err.message.contains("DashboardBody"), "{}", err.message);
    }

    #[test]
    fn the_live_dashboard_reads_back_with_the_templates_formatting() {
        let dashboard = GetDashboardOutput::builder()
            .dashboard_name("ops")
            .dashboard_arn("arn:aws:cloudwatch::1:dashboard/ops")
            .dashboard_body("{\"widgets\":[]}")
            .build();
        let template = props(json!({"DashboardBody": "{ \"widgets\": [ ] }"}));
        let tags = [
            Tag::builder().key(CREATE_TOKEN_TAG).value("tok").build(),
            Tag::builder().key("team").value("a").build(),
        ];
        assert_eq!(
            Value::Object(template_shape(&dashboard, &tags, &template)),
            json!({
                "DashboardName": "ops",
                "DashboardBody": "{ \"widgets\": [ ] }",
                "Tags": [{"Key": "team", "Value": "a"}],
            })
        );
        // A different body is CloudWatch's text.
        let other = props(json!({"DashboardBody": "{\"widgets\":[{}]}"}));
        let shape = template_shape(&dashboard, &[], &other);
        assert_eq!(shape["DashboardBody"], json!("{\"widgets\":[]}"));
        assert!(!shape.contains_key("Tags"));
    }
}
