//! ECS requests and answers as JSON: a template's properties, recased, are sent as the body of
//! an ECS call, and an answer's body is read back in template shape. ECS speaks JSON (awsJson
//! 1.1) whose members are the template's keys with a lowercase first letter, so a container
//! definition (some forty keys, nested four deep) travels whole, a key added to the schema
//! after this SDK included, instead of through hand-written conversions that would drop what
//! they do not know. The SDK still sends the call (endpoint, signing, retries, error codes): an
//! interceptor swaps the body it serialized for ours before signing and keeps the answer's.

use std::sync::{Arc, Mutex};

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::{
    AfterDeserializationInterceptorContextRef, BeforeTransmitInterceptorContextMut,
};
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::config_bag::ConfigBag;
use cdkd_provider_api::ProviderError;
use serde_json::{Map, Value};

/// Template keys whose ECS member is not the key with a lowercase first letter.
const RENAMED: &[(&str, &str)] = &[
    ("EFSVolumeConfiguration", "efsVolumeConfiguration"),
    (
        "FSxWindowsFileServerVolumeConfiguration",
        "fsxWindowsFileServerVolumeConfiguration",
    ),
    ("IAM", "iam"),
    ("PlacementStrategies", "placementStrategy"),
    ("ClusterSettings", "settings"),
    ("ProxyConfigurationProperties", "properties"),
];

/// Keys whose value is a map of the user's own keys (labels, driver options), kept as written.
const USER_MAPS: &[&str] = &["DockerLabels", "Options", "DriverOpts", "Labels"];

/// The ECS member of a template key.
pub(crate) fn api_key(key: &str) -> String {
    if let Some((_, api)) = RENAMED.iter().find(|(template, _)| *template == key) {
        return (*api).to_string();
    }
    let mut chars = key.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The template key of an ECS member.
pub(crate) fn template_key(member: &str) -> String {
    if let Some((template, _)) = RENAMED.iter().find(|(_, api)| *api == member) {
        return (*template).to_string();
    }
    let mut chars = member.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A template value as ECS takes it: every object key recased ([`api_key`]), the user's maps
/// kept as written.
pub(crate) fn to_api(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| {
                    let v = if USER_MAPS.contains(&k.as_str()) {
                        v.clone()
                    } else {
                        to_api(v)
                    };
                    (api_key(k), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(to_api).collect()),
        other => other.clone(),
    }
}

/// An ECS answer's value in template shape: keys recased ([`template_key`]), the user's maps
/// kept, and empty lists and objects (AWS's way of saying "none") left out.
pub(crate) fn to_template(value: &Value) -> Option<Value> {
    match value {
        Value::Object(map) => {
            let shaped: Map<String, Value> = map
                .iter()
                .filter_map(|(k, v)| {
                    let key = template_key(k);
                    let v = if USER_MAPS.contains(&key.as_str()) {
                        Some(v.clone()).filter(|v| v.as_object().is_some_and(|m| !m.is_empty()))
                    } else {
                        to_template(v)
                    };
                    v.map(|v| (key, v))
                })
                .collect();
            (!shaped.is_empty()).then_some(Value::Object(shaped))
        }
        Value::Array(items) => {
            let shaped: Vec<Value> = items.iter().filter_map(to_template).collect();
            (!shaped.is_empty()).then_some(Value::Array(shaped))
        }
        Value::Null => None,
        other => Some(other.clone()),
    }
}

/// Swaps the request body the SDK serialized for a JSON one, and keeps the answer's body.
#[derive(Debug, Clone)]
pub(crate) struct RawJson {
    request: Option<Arc<Vec<u8>>>,
    answer: Arc<Mutex<Option<Vec<u8>>>>,
}

impl RawJson {
    /// Sends `request` (when given) as the body and keeps the answer.
    pub(crate) fn new(request: Option<&Value>) -> RawJson {
        RawJson {
            request: request.map(|r| Arc::new(r.to_string().into_bytes())),
            answer: Arc::default(),
        }
    }

    /// The answer's body as JSON; an error naming `what` when there was none.
    pub(crate) fn answer(&self, what: &str) -> Result<Value, ProviderError> {
        let bytes = self
            .answer
            .lock()
            .map_err(|_| ProviderError::other(format!("{what}: the answer was lost")))?
            .take()
            .ok_or_else(|| ProviderError::other(format!("{what}: ECS sent no answer body")))?;
        serde_json::from_slice(&bytes)
            .map_err(|e| ProviderError::other(format!("{what}: ECS's answer is not JSON: {e}")))
    }
}

impl Intercept for RawJson {
    fn name(&self) -> &'static str {
        "cdkd-ecs-raw-json"
    }

    fn modify_before_signing(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(body) = &self.request {
            let request = context.request_mut();
            *request.body_mut() = SdkBody::from(body.as_slice().to_vec());
            request
                .headers_mut()
                .insert("Content-Length", body.len().to_string());
        }
        Ok(())
    }

    fn read_after_deserialization(
        &self,
        context: &AfterDeserializationInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(bytes) = context.response().body().bytes() {
            if let Ok(mut answer) = self.answer.lock() {
                *answer = Some(bytes.to_vec());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn template_keys_recase_both_ways_with_ecs_own_spellings() {
        assert_eq!(api_key("ContainerDefinitions"), "containerDefinitions");
        assert_eq!(api_key("EnableECSManagedTags"), "enableECSManagedTags");
        assert_eq!(api_key("PlacementStrategies"), "placementStrategy");
        assert_eq!(api_key("EFSVolumeConfiguration"), "efsVolumeConfiguration");
        assert_eq!(
            template_key("efsVolumeConfiguration"),
            "EFSVolumeConfiguration"
        );
        assert_eq!(template_key("s3BucketName"), "S3BucketName");
        assert_eq!(template_key("settings"), "ClusterSettings");
        assert_eq!(template_key("enableECSManagedTags"), "EnableECSManagedTags");
    }

    #[test]
    fn a_container_definition_travels_whole_and_comes_back_without_empty_lists() {
        let template = json!({
            "Name": "web",
            "Image": "repo:latest",
            "PortMappings": [{"ContainerPort": 80, "Protocol": "tcp"}],
            "Environment": [{"Name": "MODE", "Value": "live"}],
            "DockerLabels": {"Team": "a"},
            "LogConfiguration": {"LogDriver": "awslogs", "Options": {"awslogs-group": "g"}},
            "LinuxParameters": {"Capabilities": {"Add": ["SYS_PTRACE"]}},
            "Gone": null,
        });
        let api = to_api(&template);
        assert_eq!(
            api,
            json!({
                "name": "web",
                "image": "repo:latest",
                "portMappings": [{"containerPort": 80, "protocol": "tcp"}],
                "environment": [{"name": "MODE", "value": "live"}],
                "dockerLabels": {"Team": "a"},
                "logConfiguration": {"logDriver": "awslogs", "options": {"awslogs-group": "g"}},
                "linuxParameters": {"capabilities": {"add": ["SYS_PTRACE"]}},
            })
        );
        let mut answer = api.clone();
        answer["mountPoints"] = json!([]);
        answer["volumesFrom"] = json!([]);
        let mut expected = template.clone();
        expected.as_object_mut().unwrap().remove("Gone");
        assert_eq!(to_template(&answer), Some(expected));
    }
}
