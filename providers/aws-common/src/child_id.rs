//! The physical id of a resource that lives in a parent (`ParentId|ChildId`), as API Gateway's
//! and API Gateway v2's child types write it.

use cdkd_provider_api::{ErrorKind, ProviderError};
use serde_json::{Map, Value};

/// A child's physical id `ParentId|ChildId` (API Gateway's and API Gateway v2's stages, routes,
/// integrations, authorizers, ... in their API; a mapping on its domain name): the one frame
/// every child type parses, builds and finds.
#[derive(Debug, PartialEq)]
pub struct ChildId<'a> {
    /// The parent's id: the API's id, or the domain name.
    pub parent: &'a str,
    /// The child's own id (a stage's name).
    pub id: &'a str,
}

impl<'a> ChildId<'a> {
    /// Splits `physical_id`; a bare child id (an import given only the child's id) takes its
    /// parent from the template's `parent_key`.
    pub fn parse(
        physical_id: &'a str,
        properties: &'a Map<String, Value>,
        parent_key: &str,
        what: &str,
    ) -> Result<Self, ProviderError> {
        if let Some((parent, id)) = physical_id.split_once('|') {
            return Ok(ChildId { parent, id });
        }
        match properties.get(parent_key).and_then(Value::as_str) {
            Some(parent) => Ok(ChildId {
                parent,
                id: physical_id,
            }),
            None => Err(ProviderError::validation(format!(
                "{what}: physical id {physical_id} is not {parent_key}|Id and the template gives no {parent_key}"
            ))),
        }
    }

    /// The physical id of child `id` in `parent`.
    pub fn join(parent: &str, id: &str) -> String {
        format!("{parent}|{id}")
    }

    /// The physical id of the one child among `ids` (those of `parent` that match what
    /// `matching` says): none, or a conflict when several match, since cdkd cannot tell which
    /// one its create made.
    pub fn only<S: AsRef<str>>(
        what: &str,
        parent: &str,
        matching: &str,
        ids: &[S],
    ) -> Result<Option<String>, ProviderError> {
        let ids: Vec<&str> = ids.iter().map(AsRef::as_ref).collect();
        match ids.as_slice() {
            [] => Ok(None),
            [id] => Ok(Some(Self::join(parent, id))),
            _ => Err(ProviderError::new(
                ErrorKind::CONFLICT,
                format!(
                    "{what}: {} {matching} in {parent}: {}; cdkd cannot tell which one its create made (delete the extra ones, or import the right one)",
                    ids.len(),
                    ids.join(", ")
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn child_ids_split_and_bare_ones_take_the_templates_parent() {
        let props = json!({"ApiId": "abc"}).as_object().cloned().unwrap();
        let child = |id| ChildId::parse(id, &props, "ApiId", "w");
        assert_eq!(
            child("a1|r1").unwrap(),
            ChildId {
                parent: "a1",
                id: "r1"
            }
        );
        assert_eq!(
            child("r1").unwrap(),
            ChildId {
                parent: "abc",
                id: "r1"
            }
        );
        let err = ChildId::parse("r1", &Map::new(), "DomainName", "w").unwrap_err();
        assert_eq!(err.kind, ErrorKind::VALIDATION);
        assert!(err.message.contains("DomainName|Id"), "{}", err.message);
    }

    #[test]
    fn a_child_is_found_once_or_refused_as_ambiguous() {
        assert_eq!(
            ChildId::only::<&str>("w", "a1", "routes", &[]).unwrap(),
            None
        );
        assert_eq!(
            ChildId::only("w", "a1", "routes", &["r1"])
                .unwrap()
                .as_deref(),
            Some("a1|r1")
        );
        let err = ChildId::only("w", "a1", "routes of key GET /", &["r1", "r2"]).unwrap_err();
        assert_eq!(err.kind, ErrorKind::CONFLICT);
        assert!(
            err.message.contains("2 routes of key GET / in a1: r1, r2"),
            "{}",
            err.message
        );
    }
}
