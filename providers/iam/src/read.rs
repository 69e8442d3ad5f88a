//! What the IAM types' readers share (each type reads itself back in its own file): policy
//! documents and tags in template shape, and a principal's own policies (`principal.rs`), as
//! `read_current_state` reports them (drift, `observedProperties`) and `import` checks them.

use cdkd_aws_common::optional;
use cdkd_provider_api::ProviderError;
use serde_json::{json, Map, Value};

use crate::principal::{attached_policies, inline_policy_names, on_principal, Principal};

/// A policy document as IAM returns it (URL-encoded JSON) in template shape.
pub(crate) fn document(text: &str) -> Value {
    let decoded = percent_decode(text);
    serde_json::from_str(&decoded).unwrap_or(Value::String(decoded))
}

/// IAM tags in template shape (none: absent).
pub(crate) fn tags(tags: &[aws_sdk_iam::types::Tag]) -> Option<Value> {
    (!tags.is_empty()).then(|| {
        Value::Array(
            tags.iter()
                .map(|t| json!({"Key": t.key(), "Value": t.value()}))
                .collect(),
        )
    })
}

/// The inline policy `name` on `target`, if it is there.
pub(crate) async fn inline_document(
    iam: &aws_sdk_iam::Client,
    what: &str,
    kind: Principal,
    target: &str,
    name: &str,
) -> Result<Option<Value>, ProviderError> {
    let context = format!("{what}: reading {name} on {target}");
    Ok(on_principal!(
        iam,
        kind,
        target,
        get_role_policy / get_user_policy / get_group_policy,
        |call| optional(&context, call.policy_name(name).send().await)?
            .map(|p| document(p.policy_document()))
    ))
}

/// The inline policies a template declares on a principal itself (`Policies`); `None` without a
/// template (an import), when every inline policy is reported.
fn declared_policies(template: &Map<String, Value>) -> Option<Vec<String>> {
    (!template.is_empty()).then(|| {
        crate::inline_policies(template)
            .into_iter()
            .map(|(name, _)| name)
            .collect()
    })
}

/// The managed policies attached to, and the inline policies on, a user or group. Inline
/// policies another resource (`AWS::IAM::Policy`) puts there are not the principal's own: with
/// a template, only the ones it declares are reported, so they never read as drift.
pub(crate) async fn policies_of(
    iam: &aws_sdk_iam::Client,
    what: &str,
    kind: Principal,
    name: &str,
    template: &Map<String, Value>,
    props: &mut Map<String, Value>,
) -> Result<(), ProviderError> {
    let attached = attached_policies(iam, what, kind, name).await?;
    let inline = inline_policy_names(iam, what, kind, name).await?;
    if !attached.is_empty() {
        props.insert("ManagedPolicyArns".into(), json!(attached));
    }
    let declared = declared_policies(template);
    let mut policies = Vec::new();
    for policy in inline
        .into_iter()
        .filter(|p| declared.as_ref().is_none_or(|d| d.contains(p)))
    {
        if let Some(doc) = inline_document(iam, what, kind, name, &policy).await? {
            policies.push(json!({"PolicyName": policy, "PolicyDocument": doc}));
        }
    }
    if !policies.is_empty() {
        props.insert("Policies".into(), Value::Array(policies));
    }
    Ok(())
}

/// IAM returns policy documents URL-encoded.
pub(crate) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(byte) = u8::from_str_radix(&text[i + 1..i + 3], 16) {
                out.push(byte);
                i += 3;
                continue;
            }
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn policy_documents_are_url_decoded() {
        assert_eq!(
            super::percent_decode("%7B%22Version%22%3A%222012-10-17%22%7D"),
            "{\"Version\":\"2012-10-17\"}"
        );
        assert_eq!(super::percent_decode("{\"a\":1}"), "{\"a\":1}");
    }
}
