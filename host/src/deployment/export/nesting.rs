//! What a parent's IMPORT needs of each nested stack it nests: the child's stack id, tags,
//! current template and parameters, written into the parent's template. The CloudFormation
//! side (the tag flip out of `IMPORT_COMPLETE`, the processed template) is in
//! [`crate::cloudformation::nesting`].

use std::collections::BTreeMap;

pub use crate::cloudformation::FLIP_TAG;

/// What a parent's template needs of one child to nest it.
#[derive(Debug, Clone, PartialEq)]
pub struct Nest {
    /// The child's stack id (its `ResourceIdentifier` and physical id).
    pub stack_id: String,
    /// Where its current template was uploaded.
    pub template_url: String,
    /// Its tags (the flip tag included), which the parent's IMPORT must carry exactly.
    pub tags: Vec<(String, String)>,
    /// The parameter values the parent passes it, resolved: the IMPORT carries them as
    /// literals, which match the stack's values whatever CloudFormation could resolve.
    pub parameters: BTreeMap<String, String>,
}

/// Points each child resource of `template` at its uploaded template; for the IMPORT that
/// nests them (`importing`), also `DeletionPolicy: Retain`, the child's tags and its resolved
/// parameters, which AWS checks against the existing stack.
pub fn point_children(
    template: &mut serde_json::Value,
    nests: &BTreeMap<String, Nest>,
    importing: bool,
) {
    use serde_json::{json, Value};
    let Some(resources) = template.get_mut("Resources").and_then(Value::as_object_mut) else {
        return;
    };
    for (logical_id, nest) in nests {
        let Some(resource) = resources.get_mut(logical_id) else {
            continue;
        };
        resource["Properties"]["TemplateURL"] = Value::String(nest.template_url.clone());
        if importing {
            resource["DeletionPolicy"] = json!("Retain");
            resource["Properties"]["Tags"] = nest
                .tags
                .iter()
                .map(|(key, value)| json!({"Key": key, "Value": value}))
                .collect();
            if !nest.parameters.is_empty() {
                resource["Properties"]["Parameters"] = nest
                    .parameters
                    .iter()
                    .map(|(key, value)| (key.clone(), Value::String(value.clone())))
                    .collect();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn children_point_at_their_uploads_and_the_import_carries_retain_and_tags() {
        let template = json!({"Resources": {
            "Child": {"Type": "AWS::CloudFormation::Stack", "DeletionPolicy": "Delete",
                      "Properties": {"TemplateURL": {"Fn::Join": ["", ["https://", "x"]]}, "Parameters": {"P": {"Ref": "Q"}}}},
            "Q": {"Type": "AWS::SQS::Queue"}
        }});
        let nests = BTreeMap::from([(
            "Child".to_string(),
            Nest {
                stack_id: "arn:aws:cloudformation:us-east-1:1:stack/P-Child/abc".into(),
                template_url: "https://b.s3.us-east-1.amazonaws.com/k".into(),
                tags: vec![(FLIP_TAG.into(), "1".into())],
                parameters: BTreeMap::from([("P".to_string(), "queue-1".to_string())]),
            },
        )]);
        let mut importing = template.clone();
        point_children(&mut importing, &nests, true);
        let child = &importing["Resources"]["Child"];
        assert_eq!(child["DeletionPolicy"], "Retain");
        assert_eq!(
            child["Properties"]["TemplateURL"],
            "https://b.s3.us-east-1.amazonaws.com/k"
        );
        assert_eq!(
            child["Properties"]["Tags"],
            json!([{"Key": FLIP_TAG, "Value": "1"}])
        );
        assert_eq!(child["Properties"]["Parameters"], json!({"P": "queue-1"}));
        let mut updating = template.clone();
        point_children(&mut updating, &nests, false);
        let child = &updating["Resources"]["Child"];
        assert_eq!(child["DeletionPolicy"], "Delete");
        assert!(child["Properties"].get("Tags").is_none());
        assert_eq!(
            child["Properties"]["Parameters"],
            json!({"P": {"Ref": "Q"}})
        );
        assert_eq!(importing["Resources"]["Q"], template["Resources"]["Q"]);
    }
}
