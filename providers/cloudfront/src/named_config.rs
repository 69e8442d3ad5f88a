//! The CloudFront types whose template is one `…Config` object with a `Name` unique in the
//! account (`CachePolicy`, `OriginRequestPolicy`, `ResponseHeadersPolicy`,
//! `OriginAccessControl`): physical id (and `Ref`) is CloudFront's id; attributes `Id` and, where
//! CloudFront keeps one, `LastModifiedTime`. Each type says how to convert its config and which
//! calls make, read, change and delete it ([`NamedConfig`], written from the calls' names by
//! [`named_config!`]); [`Named`] is the provider. After a
//! crash the resource is found by its name (the template's, else one generated from the create's
//! token); a create answered "already exists" adopts the resource of that name only when its
//! configuration is the one asked for (a retried create whose first answer was lost).
//! `find_created` is [`cdkd_aws_common::Reads`]'s, through [`Readable::created_id`].

use std::marker::PhantomData;

use cdkd_aws_common::{created_name, generated_name, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{client, config_name};

/// What CloudFront answers for one resource: its config, last change and ETag.
pub(crate) struct Live<C> {
    /// The configuration.
    pub config: C,
    /// `LastModifiedTime`, for the types that have it.
    pub modified: Option<aws_sdk_cloudfront::primitives::DateTime>,
    /// The ETag the next update or delete must send.
    pub etag: String,
}

/// One named-config type's conversions and calls.
#[async_trait]
pub(crate) trait NamedConfig: Send + Sync + 'static {
    /// The CloudFormation type name.
    const TYPE: &'static str;
    /// The template property holding the config (`CachePolicyConfig`).
    const CONFIG: &'static str;
    /// The longest name CloudFront takes.
    const MAX_NAME: usize;
    /// Whether the type reports `LastModifiedTime`.
    const MODIFIED: bool;
    /// The SDK's config type.
    type Config: Send + Sync;

    /// The template's config (with `name` as its name) as the SDK's.
    fn to_sdk(what: &str, config: &Value, name: &str) -> Result<Self::Config, ProviderError>;
    /// The SDK's config in template shape.
    fn shape(config: &Self::Config) -> Value;
    /// Creates it: its id, last change and ETag.
    async fn create(
        cf: &aws_sdk_cloudfront::Client,
        what: &str,
        config: Self::Config,
    ) -> Result<(String, Live<()>), ProviderError>;
    /// Reads it; `None` when it is gone.
    async fn get(
        cf: &aws_sdk_cloudfront::Client,
        what: &str,
        id: &str,
    ) -> Result<Option<Live<Self::Config>>, ProviderError>;
    /// Replaces its config; its new last change.
    async fn update(
        cf: &aws_sdk_cloudfront::Client,
        what: &str,
        id: &str,
        etag: &str,
        config: Self::Config,
    ) -> Result<Option<aws_sdk_cloudfront::primitives::DateTime>, ProviderError>;
    /// Deletes it.
    async fn delete(
        cf: &aws_sdk_cloudfront::Client,
        what: &str,
        id: &str,
        etag: &str,
    ) -> Result<(), ProviderError>;
    /// The id of the account's own (not AWS-managed) resource named `name`.
    async fn find(
        cf: &aws_sdk_cloudfront::Client,
        what: &str,
        name: &str,
    ) -> Result<Option<String>, ProviderError>;
}

/// Writes a type's [`NamedConfig`] from the names of its CloudFront calls and answer fields: the
/// frame around them (the ETag kept from each read, `LastModifiedTime`, paging by marker through
/// the account's list) is the same for every named-config type. `policy` types list summaries
/// holding the policy, filtered to the account's own (`Custom`) and report their last change;
/// `control` lists carry the name and id themselves, page while `IsTruncated`, and have no
/// last change. The type's module supplies `to_config` and `shape`.
macro_rules! named_config {
    (
        $kind:ident $ty:ident: $config:ident {
            max_name: $max:expr,
            calls: $create:ident, $get:ident, $update:ident, $delete:ident,
            list: $list:ident / $list_op:literal $(($type_filter:expr))?,
            fields: $resource:ident, $config_field:ident, $list_field:ident $(,)?
        }
    ) => {
        #[cdkd_provider_api::async_trait]
        impl $crate::named_config::NamedConfig for $ty {
            const TYPE: &'static str = concat!("AWS::CloudFront::", stringify!($ty));
            const CONFIG: &'static str = stringify!($config);
            const MAX_NAME: usize = $max;
            const MODIFIED: bool = $crate::named_config::named_config!(@has_modified $kind);
            type Config = aws_sdk_cloudfront::types::$config;

            fn to_sdk(
                what: &str,
                config: &serde_json::Value,
                name: &str,
            ) -> Result<Self::Config, cdkd_provider_api::ProviderError> {
                to_config(what, config, name)
            }

            fn shape(config: &Self::Config) -> serde_json::Value {
                shape(config)
            }

            async fn create(
                cf: &aws_sdk_cloudfront::Client,
                what: &str,
                config: Self::Config,
            ) -> Result<(String, $crate::named_config::Live<()>), cdkd_provider_api::ProviderError>
            {
                let op = concat!("Create", stringify!($ty));
                let name = config.name().to_string();
                let answer = cf
                    .$create()
                    .$config_field(config)
                    .send()
                    .await
                    .map_err($crate::failed!(format!("{what}: {op} {name}")))?;
                let created = answer.$resource().ok_or_else(|| {
                    cdkd_provider_api::ProviderError::other(format!(
                        "{what}: {op} returned no {}",
                        $crate::named_config::named_config!(@noun $kind)
                    ))
                })?;
                Ok((
                    created.id().to_string(),
                    $crate::named_config::Live {
                        config: (),
                        modified: $crate::named_config::named_config!(@modified $kind created),
                        etag: answer.e_tag().unwrap_or_default().to_string(),
                    },
                ))
            }

            async fn get(
                cf: &aws_sdk_cloudfront::Client,
                what: &str,
                id: &str,
            ) -> Result<
                Option<$crate::named_config::Live<Self::Config>>,
                cdkd_provider_api::ProviderError,
            > {
                let op = concat!("Get", stringify!($ty));
                let answer = cdkd_aws_common::found(
                    cf.$get()
                        .id(id)
                        .send()
                        .await
                        .map_err($crate::failed!(format!("{what}: {op} {id}"))),
                )?;
                let Some(answer) = answer else {
                    return Ok(None);
                };
                let Some(live) = answer.$resource() else {
                    return Ok(None);
                };
                let Some(config) = live.$config_field() else {
                    return Ok(None);
                };
                Ok(Some($crate::named_config::Live {
                    config: config.clone(),
                    modified: $crate::named_config::named_config!(@modified $kind live),
                    etag: $crate::etag(what, answer.e_tag())?,
                }))
            }

            async fn update(
                cf: &aws_sdk_cloudfront::Client,
                what: &str,
                id: &str,
                etag: &str,
                config: Self::Config,
            ) -> Result<
                Option<aws_sdk_cloudfront::primitives::DateTime>,
                cdkd_provider_api::ProviderError,
            > {
                let op = concat!("Update", stringify!($ty));
                let answer = cf
                    .$update()
                    .id(id)
                    .if_match(etag)
                    .$config_field(config)
                    .send()
                    .await
                    .map_err($crate::failed!(format!("{what}: {op} {id}")))?;
                Ok($crate::named_config::named_config!(@updated $kind answer $resource))
            }

            async fn delete(
                cf: &aws_sdk_cloudfront::Client,
                what: &str,
                id: &str,
                etag: &str,
            ) -> Result<(), cdkd_provider_api::ProviderError> {
                let op = concat!("Delete", stringify!($ty));
                cf.$delete()
                    .id(id)
                    .if_match(etag)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err($crate::failed!(format!("{what}: {op} {id}")))
            }

            async fn find(
                cf: &aws_sdk_cloudfront::Client,
                what: &str,
                name: &str,
            ) -> Result<Option<String>, cdkd_provider_api::ProviderError> {
                let mut marker: Option<String> = None;
                loop {
                    let answer = cf
                        .$list()
                        $(.r#type($type_filter))?
                        .set_marker(marker.take())
                        .send()
                        .await
                        .map_err($crate::failed!(format!("{what}: {}", $list_op)))?;
                    let Some(list) = answer.$list_field() else {
                        return Ok(None);
                    };
                    let found = $crate::named_config::named_config!(
                        @find $kind list name $resource $config_field
                    );
                    if let Some(found) = found {
                        return Ok(Some(found));
                    }
                    match list.next_marker() {
                        Some(next)
                            if $crate::named_config::named_config!(@more $kind list next) =>
                        {
                            marker = Some(next.to_string())
                        }
                        _ => return Ok(None),
                    }
                }
            }
        }
    };
    (@has_modified policy) => { true };
    (@has_modified control) => { false };
    (@noun policy) => { "policy" };
    (@noun control) => { "control" };
    (@modified policy $live:ident) => { Some(*$live.last_modified_time()) };
    (@modified control $live:ident) => {{
        let _ = $live;
        None
    }};
    (@updated policy $answer:ident $resource:ident) => {
        $answer.$resource().map(|p| *p.last_modified_time())
    };
    (@updated control $answer:ident $resource:ident) => {{
        let _ = $answer;
        None
    }};
    (@find policy $list:ident $name:ident $resource:ident $config_field:ident) => {
        $list
            .items()
            .iter()
            .filter_map(|summary| summary.$resource())
            .find(|p| p.$config_field().is_some_and(|c| c.name() == $name))
            .map(|p| p.id().to_string())
    };
    (@find control $list:ident $name:ident $resource:ident $config_field:ident) => {
        $list
            .items()
            .iter()
            .find(|c| c.name() == $name)
            .map(|c| c.id().to_string())
    };
    (@more policy $list:ident $next:ident) => { !$next.is_empty() };
    (@more control $list:ident $next:ident) => { !$next.is_empty() && $list.is_truncated() };
}
pub(crate) use named_config;

/// The provider of a [`NamedConfig`] type.
pub(crate) struct Named<T>(PhantomData<T>);

impl<T> Default for Named<T> {
    fn default() -> Self {
        Named(PhantomData)
    }
}

fn what<T: NamedConfig>(logical_id: &str) -> String {
    format!("{} {logical_id}", T::TYPE)
}

/// The template's config object, required.
fn config_of<'a, T: NamedConfig>(
    properties: &'a Map<String, Value>,
    what: &str,
) -> Result<&'a Value, ProviderError> {
    properties
        .get(T::CONFIG)
        .filter(|v| v.is_object())
        .ok_or_else(|| {
            ProviderError::validation(format!(
                "{what}: property {} is required and must be an object",
                T::CONFIG
            ))
        })
}

/// The name a create gives the resource: the template's, else one generated from the token.
fn create_name<T: NamedConfig>(request: &CreateRequest) -> String {
    config_name(&request.properties, T::CONFIG).unwrap_or_else(|| {
        generated_name(
            &request.stack_name,
            &request.logical_id,
            &request.client_token,
            T::MAX_NAME,
            false,
            "",
        )
    })
}

fn attributes<T: NamedConfig>(
    id: &str,
    modified: Option<&aws_sdk_cloudfront::primitives::DateTime>,
) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Id".into(), json!(id));
    if T::MODIFIED {
        if let Some(time) = modified {
            attributes.insert("LastModifiedTime".into(), crate::timestamp(time));
        }
    }
    attributes
}

/// The properties of a live resource in template shape.
fn properties<T: NamedConfig>(config: &T::Config) -> Map<String, Value> {
    let mut properties = Map::new();
    properties.insert(T::CONFIG.into(), T::shape(config));
    properties
}

#[async_trait]
impl<T: NamedConfig> ResourceProvider for Named<T> {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(T::TYPE)
            .handles(&[T::CONFIG])
            .read_and_import()
            .finds_created_in(&[T::CONFIG])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what::<T>(&request.logical_id);
        let name = create_name::<T>(&request);
        let config = config_of::<T>(&request.properties, &what)?;
        let wanted = T::shape(&T::to_sdk(&what, config, &name)?);
        let cf = client(ctx).await?;
        let (id, modified) = match T::create(&cf, &what, T::to_sdk(&what, config, &name)?).await {
            Ok((id, live)) => (id, live.modified),
            Err(err) if err.kind == ErrorKind::ALREADY_EXISTS => {
                // Ours when it is exactly what was asked for (the first answer was lost).
                let existing = match T::find(&cf, &what, &name).await? {
                    Some(id) => T::get(&cf, &what, &id).await?.map(|live| (id, live)),
                    None => None,
                };
                match existing {
                    Some((id, live)) if T::shape(&live.config) == wanted => {
                        tracing::info!("{what}: adopting {name} ({id}), made by an earlier attempt");
                        (id, live.modified)
                    }
                    _ => {
                        return Err(ProviderError::new(
                            ErrorKind::ALREADY_EXISTS,
                            format!("{}; another resource is named {name}: rename it in the template, or import it", err.message),
                        )
                        .with_aws_code(err.aws_code().unwrap_or_default()))
                    }
                }
            }
            Err(err) => return Err(err),
        };
        Ok(CreateResult {
            attributes: attributes::<T>(&id, modified.as_ref()),
            physical_id: id,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = what::<T>(&request.logical_id);
        let id = request.physical_id.clone();
        let cf = client(ctx).await?;
        let live = T::get(&cf, &what, &id)
            .await?
            .ok_or_else(|| cdkd_aws_common::does_not_exist(&what, &id, "CloudFront"))?;
        // The name stays the live one when the template gives none (it was generated).
        let name = config_name(&request.properties, T::CONFIG).unwrap_or_else(|| {
            T::shape(&live.config)["Name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        });
        let config = T::to_sdk(&what, config_of::<T>(&request.properties, &what)?, &name)?;
        let modified = T::update(&cf, &what, &id, &live.etag, config).await?;
        Ok(UpdateResult {
            attributes: attributes::<T>(&id, modified.as_ref()),
            physical_id: id,
            replaced: false,
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what::<T>(&request.logical_id);
        let id = &request.physical_id;
        let cf = client(ctx).await?;
        let Some(live) = T::get(&cf, &what, id).await? else {
            return Ok(DeleteResult::Deleted);
        };
        cdkd_aws_common::deleted_unless_failed(T::delete(&cf, &what, id, &live.etag).await)
    }
}

#[async_trait]
impl<T: NamedConfig> Readable for Named<T> {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let cf = client(ctx).await?;
        Ok(T::get(&cf, what, &request.physical_id)
            .await?
            .map(|live| properties::<T>(&live.config)))
    }

    /// The id of the resource of the template's (or the generated) name: the host then reads it.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let wanted = config_name(&request.properties, T::CONFIG)
            .or_else(|| created_name(request, None, T::MAX_NAME, false));
        let Some(wanted) = wanted else {
            return Ok(None);
        };
        T::find(&client(ctx).await?, what, &wanted).await
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let cf = client(ctx).await?;
        let live = T::get(&cf, what, physical_id)
            .await?
            .ok_or_else(|| cdkd_aws_common::does_not_exist(what, physical_id, "CloudFront"))?;
        Ok(attributes::<T>(physical_id, live.modified.as_ref()))
    }
}

/// A template list under `key` (`[]` when absent).
pub(crate) fn list(value: &Value, key: &str) -> Vec<String> {
    cdkd_aws_common::strings(value.get(key)).unwrap_or_default()
}

/// A string under `key`.
pub(crate) fn s(value: &Value, key: &str) -> Option<String> {
    cdkd_aws_common::text(value.get(key))
}

/// A 32-bit integer under `key`.
pub(crate) fn n32(value: &Value, key: &str) -> Option<i32> {
    cdkd_aws_common::int(value.get(key))
}

/// A 64-bit integer under `key` (templates may write numbers as strings).
pub(crate) fn n64(value: &Value, key: &str) -> Option<i64> {
    let v = value.get(key)?;
    v.as_i64()
        .or_else(|| v.as_f64().map(|f| f as i64))
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
}

/// A boolean under `key`.
pub(crate) fn b(value: &Value, key: &str) -> Option<bool> {
    cdkd_aws_common::flag(value.get(key))
}

/// An object under `key`, when there is one.
pub(crate) fn o<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    value.get(key).filter(|v| v.is_object())
}

/// The objects of a list under `key`.
pub(crate) fn objects<'a>(value: &'a Value, key: &str) -> Vec<&'a Value> {
    value
        .get(key)
        .and_then(Value::as_array)
        .map(|items| items.iter().filter(|v| v.is_object()).collect())
        .unwrap_or_default()
}

/// A template object being written: keys with no value are left out.
#[derive(Default)]
pub(crate) struct Shape(pub Map<String, Value>);

impl Shape {
    /// Sets `key` to `value` when there is one.
    pub fn put(mut self, key: &str, value: Option<impl Into<Value>>) -> Shape {
        if let Some(value) = value {
            self.0.insert(key.into(), value.into());
        }
        self
    }

    /// Sets `key` to the list when it is not empty.
    pub fn list<S: ToString>(mut self, key: &str, items: &[S]) -> Shape {
        if !items.is_empty() {
            self.0.insert(
                key.into(),
                Value::Array(items.iter().map(|i| json!(i.to_string())).collect()),
            );
        }
        self
    }

    /// Sets `key` to the non-empty string.
    pub fn text(self, key: &str, value: Option<&str>) -> Shape {
        self.put(key, value.filter(|v| !v.is_empty()).map(str::to_string))
    }

    /// The object.
    pub fn done(self) -> Value {
        Value::Object(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_values_read_in_their_spellings_and_shapes_leave_out_the_empty() {
        let v = json!({"A": "30", "B": 5, "C": "true", "L": ["x", "y"], "O": {"k": 1}, "Os": [{"a": 1}, 2]});
        assert_eq!(n64(&v, "A"), Some(30));
        assert_eq!(n32(&v, "B"), Some(5));
        assert_eq!(b(&v, "C"), Some(true));
        assert_eq!(list(&v, "L"), ["x", "y"]);
        assert!(list(&v, "Z").is_empty());
        assert!(o(&v, "O").is_some() && o(&v, "A").is_none());
        assert_eq!(objects(&v, "Os").len(), 1);
        let shape = Shape::default()
            .put("A", Some(1))
            .put("B", None::<i32>)
            .list("L", &["x"])
            .list::<String>("M", &[])
            .text("T", Some(""))
            .done();
        assert_eq!(shape, json!({"A": 1, "L": ["x"]}));
    }
}
