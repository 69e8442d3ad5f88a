//! `cdkd export`: hands a stack cdkd deployed over to CloudFormation without touching a
//! resource. The plan is made first, from state, the template and the registry alone
//! ([`plan`]); then, under the stack's lock, an IMPORT change set adopts the resources
//! ([`crate::cloudformation::changeset`]) with the template [`template`] prepares,
//! IMPORT-unsupported resources are deleted and an UPDATE change set restores the whole
//! template; cdkd's record goes last.
//! Nested stacks ([`tree`]) become CloudFormation stacks of their own first, and are then
//! nested into their parents ([`nesting`], [`handover`]).

pub mod destination;
pub mod handover;
pub mod identifiers;
pub mod nesting;
pub mod plan;
pub mod template;
pub mod tree;

/// Fn::GetStackOutput references in `template` to `producer`: the template's logical ids (or
/// output names) that read it.
pub fn reads_of(template: &serde_json::Value, producer: &str) -> Vec<String> {
    let mut found = Vec::new();
    for section in ["Resources", "Outputs", "Conditions"] {
        if let Some(entries) = template.get(section).and_then(serde_json::Value::as_object) {
            for (name, body) in entries {
                if reads(body, producer) {
                    found.push(name.clone());
                }
            }
        }
    }
    found
}

fn reads(value: &serde_json::Value, producer: &str) -> bool {
    match value {
        serde_json::Value::Object(map) => {
            let direct = map
                .get("Fn::GetStackOutput")
                .and_then(|args| args.get("StackName"))
                .and_then(serde_json::Value::as_str)
                == Some(producer);
            direct || map.values().any(|v| reads(v, producer))
        }
        serde_json::Value::Array(items) => items.iter().any(|v| reads(v, producer)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn consumers_are_found_by_their_get_stack_output_reads() {
        let consumer = json!({
            "Resources": {
                "Reader": {"Properties": {"Q": {"Fn::Join": ["", [{"Fn::GetStackOutput": {"StackName": "Producer", "OutputName": "Url"}}]]}}},
                "Other": {"Properties": {"Q": {"Fn::GetStackOutput": {"StackName": "Else", "OutputName": "Url"}}}}
            },
            "Outputs": {"Echo": {"Value": {"Fn::GetStackOutput": {"StackName": "Producer", "OutputName": "Url"}}}}
        });
        assert_eq!(super::reads_of(&consumer, "Producer"), ["Reader", "Echo"]);
        assert!(super::reads_of(&consumer, "Nobody").is_empty());
    }
}
