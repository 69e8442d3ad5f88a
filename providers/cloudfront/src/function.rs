//! `AWS::CloudFront::Function`: physical id (and `Ref`) is the function's ARN; attributes
//! `FunctionARN`, `FunctionMetadata.FunctionARN` and `Stage` (`LIVE` once published). Code and
//! configuration are written to the `DEVELOPMENT` stage and, with `AutoPublish`, published to
//! `LIVE` (what a distribution's function association runs), each with the ETag of the step
//! before. The name is unique in the account: after a crash the function is found by it, and a
//! create answered `FunctionAlreadyExists` adopts the function only when its code and
//! configuration are the ones asked for.

use aws_sdk_cloudfront::primitives::Blob;
use aws_sdk_cloudfront::types::{
    FunctionConfig, FunctionStage, KeyValueStoreAssociation, KeyValueStoreAssociations,
};
use cdkd_aws_common::{
    created_name, generated_name, tag_map_without_token, template_tags, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::named_config::{objects, s, Shape};
use crate::{built, client, etag, failed, live_tags, sdk_tags, set_tags};

const TYPE: &str = "AWS::CloudFront::Function";

/// The longest function name CloudFront takes.
const MAX_NAME: usize = 64;

/// The `AWS::CloudFront::Function` provider.
#[derive(Default)]
pub struct Function;

/// The function's name in its ARN (`arn:aws:cloudfront::1:function/NAME`); a bare name as it is.
fn name_of(physical_id: &str) -> &str {
    physical_id
        .rsplit_once(":function/")
        .map(|(_, name)| name)
        .unwrap_or(physical_id)
}

fn create_name(request: &CreateRequest) -> String {
    s(&Value::Object(request.properties.clone()), "Name").unwrap_or_else(|| {
        generated_name(
            &request.stack_name,
            &request.logical_id,
            &request.client_token,
            MAX_NAME,
            false,
            "",
        )
    })
}

fn function_config(
    what: &str,
    properties: &Map<String, Value>,
) -> Result<FunctionConfig, ProviderError> {
    let config = properties
        .get("FunctionConfig")
        .filter(|c| c.is_object())
        .ok_or_else(|| {
            ProviderError::validation(format!(
                "{what}: property FunctionConfig is required and must be an object"
            ))
        })?;
    let stores = objects(config, "KeyValueStoreAssociations")
        .into_iter()
        .map(|a| {
            built(
                what,
                KeyValueStoreAssociation::builder()
                    .key_value_store_arn(s(a, "KeyValueStoreARN").unwrap_or_default())
                    .build(),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let associations = if stores.is_empty() {
        None
    } else {
        Some(built(
            what,
            KeyValueStoreAssociations::builder()
                .quantity(stores.len() as i32)
                .set_items(Some(stores))
                .build(),
        )?)
    };
    built(
        what,
        FunctionConfig::builder()
            .comment(s(config, "Comment").unwrap_or_default())
            .runtime(
                s(config, "Runtime")
                    .unwrap_or_else(|| "cloudfront-js-1.0".into())
                    .as_str()
                    .into(),
            )
            .set_key_value_store_associations(associations)
            .build(),
    )
}

fn config_shape(config: &FunctionConfig) -> Value {
    let stores: Vec<Value> = config
        .key_value_store_associations()
        .map(|a| a.items())
        .unwrap_or_default()
        .iter()
        .map(|a| json!({"KeyValueStoreARN": a.key_value_store_arn()}))
        .collect();
    let shape = Shape::default()
        .put("Comment", Some(config.comment()))
        .put("Runtime", Some(config.runtime().as_str()));
    if stores.is_empty() {
        shape.done()
    } else {
        shape.put("KeyValueStoreAssociations", Some(stores)).done()
    }
}

fn code(what: &str, properties: &Map<String, Value>) -> Result<String, ProviderError> {
    cdkd_aws_common::require_str(properties, "FunctionCode", what).map(ToString::to_string)
}

/// The function in its `DEVELOPMENT` stage: ARN, config, code and ETag; `None` when it is gone.
struct Live {
    arn: String,
    config: FunctionConfig,
    code: String,
    etag: String,
}

async fn describe(
    cf: &aws_sdk_cloudfront::Client,
    what: &str,
    name: &str,
) -> Result<Option<Live>, ProviderError> {
    let described = cdkd_aws_common::found(
        cf.describe_function()
            .name(name)
            .stage(FunctionStage::Development)
            .send()
            .await
            .map_err(failed!(format!("{what}: DescribeFunction {name}"))),
    )?;
    let Some(described) = described else {
        return Ok(None);
    };
    let Some(summary) = described.function_summary() else {
        return Ok(None);
    };
    let code = cf
        .get_function()
        .name(name)
        .stage(FunctionStage::Development)
        .send()
        .await
        .map_err(failed!(format!("{what}: GetFunction {name}")))?;
    Ok(Some(Live {
        arn: summary
            .function_metadata()
            .map(|m| m.function_arn().to_string())
            .unwrap_or_default(),
        config: summary
            .function_config()
            .cloned()
            .ok_or_else(|| ProviderError::other(format!("{what}: {name} has no FunctionConfig")))?,
        code: code
            .function_code()
            .map(|b| String::from_utf8_lossy(b.as_ref()).into_owned())
            .unwrap_or_default(),
        etag: etag(what, described.e_tag())?,
    }))
}

fn attributes(arn: &str, published: bool) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("FunctionARN".into(), json!(arn));
    attributes.insert("FunctionMetadata.FunctionARN".into(), json!(arn));
    attributes.insert(
        "Stage".into(),
        json!(if published { "LIVE" } else { "DEVELOPMENT" }),
    );
    attributes
}

fn properties(
    live: &Live,
    name: &str,
    tags: &std::collections::BTreeMap<String, String>,
    template: &Map<String, Value>,
) -> Map<String, Value> {
    let mut properties = Map::new();
    cdkd_aws_common::put(
        &mut properties,
        "Tags",
        template_tags(tags.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
    );
    properties.insert("Name".into(), json!(name));
    properties.insert("FunctionConfig".into(), config_shape(&live.config));
    properties.insert("FunctionCode".into(), json!(live.code));
    // Whether a template publishes is its own setting, not a property AWS keeps.
    if let Some(auto) = template.get("AutoPublish") {
        properties.insert("AutoPublish".into(), auto.clone());
    }
    properties
}

async fn publish(
    cf: &aws_sdk_cloudfront::Client,
    what: &str,
    name: &str,
    etag: &str,
) -> Result<(), ProviderError> {
    cf.publish_function()
        .name(name)
        .if_match(etag)
        .send()
        .await
        .map(|_| ())
        .map_err(failed!(format!("{what}: PublishFunction {name}")))
}

/// Whether the function is in the `LIVE` stage.
async fn is_published(
    cf: &aws_sdk_cloudfront::Client,
    what: &str,
    name: &str,
) -> Result<bool, ProviderError> {
    let live = cdkd_aws_common::found(
        cf.describe_function()
            .name(name)
            .stage(FunctionStage::Live)
            .send()
            .await
            .map_err(failed!(format!("{what}: DescribeFunction {name} (LIVE)"))),
    )?;
    Ok(live.is_some())
}

#[async_trait]
impl ResourceProvider for Function {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "Name",
                "FunctionCode",
                "FunctionConfig",
                "AutoPublish",
                "Tags",
            ])
            .create_only(&["Name"])
            .read_and_import()
            .finds_created_in(&["Name"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let name = create_name(&request);
        let config = function_config(&what, props)?;
        let code = code(&what, props)?;
        let auto = cdkd_aws_common::flag(props.get("AutoPublish")).unwrap_or(false);
        let tags = sdk_tags(&what, &tag_map_without_token(props))?;
        let cf = client(ctx).await?;
        let created = cf
            .create_function()
            .name(&name)
            .function_config(config.clone())
            .function_code(Blob::new(code.as_bytes()))
            .set_tags(Some(tags).filter(|t| !t.is_empty()).map(|t| {
                aws_sdk_cloudfront::types::Tags::builder()
                    .set_items(Some(t))
                    .build()
            }))
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateFunction {name}")));
        let (arn, etag) = match created {
            Ok(answer) => (
                answer
                    .function_summary()
                    .and_then(|s| s.function_metadata())
                    .map(|m| m.function_arn().to_string())
                    .ok_or_else(|| {
                        ProviderError::other(format!("{what}: CreateFunction returned no ARN"))
                    })?,
                etag(&what, answer.e_tag())?,
            ),
            Err(err) if err.kind == ErrorKind::ALREADY_EXISTS => {
                // Ours when it holds exactly this code and configuration (a lost answer).
                match describe(&cf, &what, &name).await? {
                    Some(live)
                        if live.code == code
                            && config_shape(&live.config) == config_shape(&config) =>
                    {
                        tracing::info!("{what}: adopting {name}, made by an earlier attempt");
                        let before = live_tags(&cf, &what, &live.arn).await?;
                        set_tags(&cf, &what, &live.arn, &before, &tag_map_without_token(props))
                            .await?;
                        (live.arn, live.etag)
                    }
                    _ => {
                        return Err(ProviderError::new(
                            ErrorKind::ALREADY_EXISTS,
                            format!("{}; another function is named {name}: rename it in the template, or import it", err.message),
                        )
                        .with_aws_code("FunctionAlreadyExists"))
                    }
                }
            }
            Err(err) => return Err(err),
        };
        if auto {
            if let Err(err) = publish(&cf, &what, &name, &etag).await {
                let undone = cf
                    .delete_function()
                    .name(&name)
                    .if_match(&etag)
                    .send()
                    .await
                    .is_ok();
                return Err(ProviderError::new(
                    err.kind,
                    format!(
                        "{} (the function {name} was {})",
                        err.message,
                        if undone {
                            "deleted again"
                        } else {
                            "left: delete it by hand"
                        }
                    ),
                ));
            }
        }
        Ok(CreateResult {
            attributes: attributes(&arn, auto),
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
        let name = name_of(&request.physical_id).to_string();
        let props = &request.properties;
        let config = function_config(&what, props)?;
        let code = code(&what, props)?;
        let auto = cdkd_aws_common::flag(props.get("AutoPublish")).unwrap_or(false);
        let cf = client(ctx).await?;
        let live = describe(&cf, &what, &name)
            .await?
            .ok_or_else(|| cdkd_aws_common::does_not_exist(&what, &name, "CloudFront"))?;
        let changed = live.code != code || config_shape(&live.config) != config_shape(&config);
        let mut etag = live.etag.clone();
        if changed {
            let answer = cf
                .update_function()
                .name(&name)
                .if_match(&etag)
                .function_config(config)
                .function_code(Blob::new(code.as_bytes()))
                .send()
                .await
                .map_err(failed!(format!("{what}: UpdateFunction {name}")))?;
            etag = crate::etag(&what, answer.e_tag())?;
        }
        let was_auto =
            cdkd_aws_common::flag(request.previous_properties.get("AutoPublish")).unwrap_or(false);
        if auto && (changed || !was_auto) {
            publish(&cf, &what, &name, &etag).await?;
        }
        set_tags(
            &cf,
            &what,
            &live.arn,
            &tag_map_without_token(&request.previous_properties),
            &tag_map_without_token(props),
        )
        .await?;
        let published = auto || is_published(&cf, &what, &name).await?;
        Ok(UpdateResult {
            attributes: attributes(&live.arn, published),
            physical_id: request.physical_id.clone(),
            replaced: false,
            ..Default::default()
        })
    }

    /// A function a distribution still runs is refused (`FunctionInUse`), as CloudFormation's
    /// delete fails: the stack's distributions are deleted first (they depend on it).
    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = name_of(&request.physical_id);
        let cf = client(ctx).await?;
        let described = cdkd_aws_common::found(
            cf.describe_function()
                .name(name)
                .send()
                .await
                .map_err(failed!(format!("{what}: DescribeFunction {name}"))),
        )?;
        let Some(described) = described else {
            return Ok(DeleteResult::Deleted);
        };
        let etag = etag(&what, described.e_tag())?;
        cdkd_aws_common::deleted_unless_failed(
            cf.delete_function()
                .name(name)
                .if_match(etag)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteFunction {name}"))),
        )
    }
}

#[async_trait]
impl Readable for Function {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let name = name_of(&request.physical_id);
        let cf = client(ctx).await?;
        let Some(live) = describe(&cf, what, name).await? else {
            return Ok(None);
        };
        let tags = live_tags(&cf, what, &live.arn).await?;
        Ok(Some(properties(&live, name, &tags, &request.properties)))
    }

    /// The ARN of the function of the template's (or the generated) name; the host then reads it.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let Some(name) = created_name(request, Some("Name"), MAX_NAME, false) else {
            return Ok(None);
        };
        let cf = client(ctx).await?;
        Ok(describe(&cf, what, &name).await?.map(|live| live.arn))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let name = name_of(physical_id);
        let cf = client(ctx).await?;
        let live = describe(&cf, what, name)
            .await?
            .ok_or_else(|| cdkd_aws_common::does_not_exist(what, physical_id, "CloudFront"))?;
        Ok(attributes(&live.arn, is_published(&cf, what, name).await?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_arns_and_the_config_travels_both_ways() {
        assert_eq!(
            name_of("arn:aws:cloudfront::123456789012:function/us-east-1Rewrite"),
            "us-east-1Rewrite"
        );
        assert_eq!(name_of("plain"), "plain");
        let props = json!({
            "Name": "f",
            "FunctionCode": "function handler(e) { return e.request; }",
            "FunctionConfig": {"Comment": "c", "Runtime": "cloudfront-js-2.0",
                "KeyValueStoreAssociations": [{"KeyValueStoreARN": "arn:aws:cloudfront::1:key-value-store/k"}]},
        });
        let props = props.as_object().unwrap();
        let config = function_config("w", props).unwrap();
        assert_eq!(config_shape(&config), props["FunctionConfig"]);
        assert!(code("w", props).unwrap().starts_with("function"));
        let attrs = attributes("arn:x", true);
        assert_eq!(attrs["Stage"], "LIVE");
        assert_eq!(attrs["FunctionMetadata.FunctionARN"], "arn:x");
        let missing = function_config("w", &Map::new()).unwrap_err();
        assert!(missing.message.contains("FunctionConfig"));
    }
}
