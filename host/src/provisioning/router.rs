//! Which layer provisions a resource, decided per resource: a record pinned to Cloud Control
//! stays there (unless its type is exempt); a type a loaded plugin handles (custom resources
//! included: the custom-resource plugin claims them), with every template property handled →
//! the plugin; properties it does not handle → Cloud Control with a warning (unless allowed);
//! a custom resource no plugin claims → refused; no plugin → Cloud Control for `AWS::` types.

use serde_json::{Map, Value};

use super::registry::{Registry, Route};
use crate::state::schema::ProvisionedBy;

/// Types whose `cc-api` pin is not sticky: Cloud Control is broken for them and the plugin
/// addresses them by the same physical id.
pub const STICKY_CC_MIGRATION_EXEMPT: &[&str] = &["AWS::Scheduler::Schedule"];

/// `AWS::` types neither Cloud Control nor any plugin can provision (refused at pre-flight).
pub const NOT_PROVISIONABLE: &[&str] = &[
    "AWS::CloudFormation::Stack",
    "AWS::CloudFormation::WaitCondition",
    "AWS::CloudFormation::WaitConditionHandle",
    "AWS::CloudFormation::Macro",
    "AWS::CloudFormation::CustomResource",
];

/// Where one resource goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The named plugin (`provisionedBy: sdk`).
    Plugin(String),
    /// Cloud Control (`provisionedBy: cc-api`); a warning to show, if any.
    CloudControl(Option<String>),
    /// Refused before any change, with the reason.
    Refuse(String),
    /// A nested stack whose template is in the cloud assembly: deployed as a child stack.
    NestedStack,
}

impl Decision {
    /// What the state record says.
    pub fn provisioned_by(&self) -> Option<ProvisionedBy> {
        match self {
            // A nested stack is cdkd's own provider, not Cloud Control: recorded `sdk`, as the
            // spec has it, so the field is always written.
            Decision::Plugin(_) | Decision::NestedStack => Some(ProvisionedBy::Sdk),
            Decision::CloudControl(_) => Some(ProvisionedBy::CcApi),
            Decision::Refuse(_) => None,
        }
    }
}

/// `Type:Property` pairs the user allowed a plugin to drop (`--allow-unsupported-properties`).
#[derive(Debug, Clone, Default)]
pub struct AllowedDrops(pub Vec<(String, String)>);

/// An `--allow-unsupported-properties` item that is not `Type:Property`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--allow-unsupported-properties {item}: write Type:Property, e.g. AWS::S3::Bucket:AnalyticsConfigurations")]
pub struct NotTypeProperty {
    /// The item as given.
    pub item: String,
}

impl AllowedDrops {
    /// Parses `Type:Property` (the type itself contains `::`, so the last `:` splits).
    pub fn parse(items: &[String]) -> Result<AllowedDrops, NotTypeProperty> {
        items
            .iter()
            .map(|item| {
                item.rsplit_once(':')
                    .filter(|(t, p)| t.contains("::") && !p.is_empty())
                    .map(|(t, p)| (t.to_string(), p.to_string()))
                    .ok_or_else(|| NotTypeProperty { item: item.clone() })
            })
            .collect::<Result<_, _>>()
            .map(AllowedDrops)
    }

    fn allows(&self, resource_type: &str, property: &str) -> bool {
        self.0
            .iter()
            .any(|(t, p)| t == resource_type && p == property)
    }
}

/// Decides the layer for one resource.
pub fn decide(
    registry: &Registry,
    logical_id: &str,
    resource_type: &str,
    properties: &Map<String, Value>,
    recorded: Option<ProvisionedBy>,
    allowed: &AllowedDrops,
) -> Decision {
    if recorded == Some(ProvisionedBy::CcApi)
        && !STICKY_CC_MIGRATION_EXEMPT.contains(&resource_type)
    {
        return Decision::CloudControl(None);
    }
    match registry.route(resource_type) {
        Route::Plugin { name, .. } => {
            let handled = registry
                .schema(resource_type)
                .map(|s| s.handled_properties.clone())
                .unwrap_or_default();
            // `*` handles every property (a custom resource's properties are the handler's).
            let dropped: Vec<&String> = properties
                .keys()
                .filter(|p| {
                    !handled.iter().any(|h| h == "*" || h == *p) && !allowed.allows(resource_type, p)
                })
                .collect();
            if dropped.is_empty() {
                Decision::Plugin(name)
            } else if resource_type.starts_with("AWS::") {
                let names: Vec<&str> = dropped.iter().map(|s| s.as_str()).collect();
                Decision::CloudControl(Some(format!(
                    "{logical_id} ({resource_type}) uses {} which plugin {name} does not handle; provisioning it through Cloud Control instead (to keep it on the plugin and drop them, pass --allow-unsupported-properties {resource_type}:{})",
                    names.join(", "),
                    names[0]
                )))
            } else {
                Decision::Refuse(format!(
                    "{logical_id} ({resource_type}) uses {} which plugin {name} does not handle, and a private type has no Cloud Control fallback",
                    dropped.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                ))
            }
        }
        Route::CloudControl if NOT_PROVISIONABLE.contains(&resource_type) => {
            Decision::Refuse(match resource_type {
                "AWS::CloudFormation::Stack" => {
                    format!("{logical_id} is a nested stack whose template is not in the cloud assembly (its TemplateURL is not a nested template asset), which cdkd cannot deploy")
                }
                _ => format!(
                    "{logical_id} ({resource_type}) cannot be provisioned without CloudFormation"
                ),
            })
        }
        Route::CloudControl => Decision::CloudControl(None),
        Route::CustomResource => Decision::Refuse(format!(
            "{logical_id} ({resource_type}) is a custom resource and no loaded plugin handles custom resources; enable the custom-resource plugin in plugins.toml"
        )),
        Route::Unroutable(reason) => Decision::Refuse(format!("{logical_id}: {reason}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provisioning::plugins_file::{PluginsFile, PluginsFileSource};
    use serde_json::json;

    fn empty_registry() -> Registry {
        Registry::load(
            PluginsFile::parse(
                "",
                std::path::Path::new("/x/plugins.toml"),
                PluginsFileSource::Flag,
            )
            .unwrap(),
        )
    }

    #[test]
    fn without_plugins() {
        let registry = empty_registry();
        let props = json!({"QueueName": "q"}).as_object().unwrap().clone();
        let allowed = AllowedDrops::default();
        assert_eq!(
            decide(&registry, "Q", "AWS::SQS::Queue", &props, None, &allowed),
            Decision::CloudControl(None)
        );
        assert!(
            matches!(decide(&registry, "C", "Custom::Thing", &props, None, &allowed), Decision::Refuse(r) if r.contains("custom resource"))
        );
        assert!(
            matches!(decide(&registry, "N", "AWS::CloudFormation::Stack", &props, None, &allowed), Decision::Refuse(r) if r.contains("nested stack whose template"))
        );
        assert!(
            matches!(decide(&registry, "P", "Acme::X::Y", &props, None, &allowed), Decision::Refuse(r) if r.contains("no loaded plugin"))
        );
    }

    #[test]
    fn allowed_drops_parse_type_colon_property() {
        let parsed =
            AllowedDrops::parse(&["AWS::S3::Bucket:AnalyticsConfigurations".into()]).unwrap();
        assert_eq!(
            parsed.0,
            [(
                "AWS::S3::Bucket".to_string(),
                "AnalyticsConfigurations".to_string()
            )]
        );
        assert_eq!(
            AllowedDrops::parse(&["Bucket".into()]).unwrap_err(),
            NotTypeProperty {
                item: "Bucket".into()
            }
        );
    }

    #[test]
    fn a_nested_stack_row_is_recorded_sdk() {
        assert_eq!(
            Decision::NestedStack.provisioned_by(),
            Some(ProvisionedBy::Sdk)
        );
        assert_eq!(Decision::Refuse("no".into()).provisioned_by(), None);
    }
}
