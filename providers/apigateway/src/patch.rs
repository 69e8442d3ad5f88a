//! API Gateway's updates are JSON-patch operations (`op`, `path`, `value`): building them from
//! the change between two templates, one property at a time.

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_apigateway::types::{Op, PatchOperation};

/// A path segment with `~` and `/` escaped as API Gateway's paths take them (`~0`, `~1`).
pub(crate) fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// One operation.
pub(crate) fn op(op: Op, path: &str, value: Option<String>) -> PatchOperation {
    PatchOperation::builder()
        .op(op)
        .path(path)
        .set_value(value)
        .build()
}

/// `replace path value`; a missing value replaces with the empty string, which is how API
/// Gateway clears a scalar.
pub(crate) fn replace(path: &str, value: Option<String>) -> PatchOperation {
    op(Op::Replace, path, Some(value.unwrap_or_default()))
}

/// The operations that turn the string map `before` into `after` under `prefix`
/// (`/variables`): one `replace` per new or changed key, one `remove` per dropped key.
pub(crate) fn map_ops(
    prefix: &str,
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> Vec<PatchOperation> {
    let mut ops = Vec::new();
    for (key, value) in after {
        if before.get(key) != Some(value) {
            ops.push(replace(
                &format!("{prefix}/{}", escape(key)),
                Some(value.clone()),
            ));
        }
    }
    for key in before.keys().filter(|k| !after.contains_key(*k)) {
        ops.push(op(Op::Remove, &format!("{prefix}/{}", escape(key)), None));
    }
    ops
}

/// The operations that turn the set `before` into `after` for a list API Gateway changes item
/// by item in the path (`/binaryMediaTypes/image~1png`): `add` new ones, `remove` dropped ones.
pub(crate) fn set_ops_in_path(
    prefix: &str,
    before: &[String],
    after: &[String],
) -> Vec<PatchOperation> {
    let (b, a): (BTreeSet<&String>, BTreeSet<&String>) =
        (before.iter().collect(), after.iter().collect());
    let mut ops: Vec<PatchOperation> = a
        .difference(&b)
        .map(|item| op(Op::Add, &format!("{prefix}/{}", escape(item)), None))
        .collect();
    ops.extend(
        b.difference(&a)
            .map(|item| op(Op::Remove, &format!("{prefix}/{}", escape(item)), None)),
    );
    ops
}

/// The operations that turn the set `before` into `after` for a list API Gateway changes item
/// by item in the value (`add /apiStages value=api:stage`).
pub(crate) fn set_ops_in_value(
    path: &str,
    before: &[String],
    after: &[String],
) -> Vec<PatchOperation> {
    let (b, a): (BTreeSet<&String>, BTreeSet<&String>) =
        (before.iter().collect(), after.iter().collect());
    let mut ops: Vec<PatchOperation> = b
        .difference(&a)
        .map(|item| op(Op::Remove, path, Some((*item).clone())))
        .collect();
    ops.extend(
        a.difference(&b)
            .map(|item| op(Op::Add, path, Some((*item).clone()))),
    );
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(ops: &[PatchOperation]) -> Vec<String> {
        ops.iter()
            .map(|o| {
                format!(
                    "{} {} {}",
                    o.op().unwrap().as_str(),
                    o.path().unwrap(),
                    o.value().unwrap_or("-")
                )
            })
            .collect()
    }

    #[test]
    fn maps_and_sets_become_operations() {
        let before: BTreeMap<String, String> =
            [("a".into(), "1".into()), ("b/c".into(), "2".into())].into();
        let after: BTreeMap<String, String> =
            [("a".into(), "10".into()), ("d".into(), "4".into())].into();
        assert_eq!(
            show(&map_ops("/variables", &before, &after)),
            [
                "replace /variables/a 10",
                "replace /variables/d 4",
                "remove /variables/b~1c -"
            ]
        );
        assert_eq!(
            show(&set_ops_in_path(
                "/binaryMediaTypes",
                &["image/png".into()],
                &["image/jpeg".into()]
            )),
            [
                "add /binaryMediaTypes/image~1jpeg -",
                "remove /binaryMediaTypes/image~1png -"
            ]
        );
        assert_eq!(
            show(&set_ops_in_value(
                "/apiStages",
                &["a:prod".into()],
                &["a:live".into()]
            )),
            ["remove /apiStages a:prod", "add /apiStages a:live"]
        );
        assert_eq!(
            show(&[replace("/description", None)]),
            ["replace /description "]
        );
    }
}
