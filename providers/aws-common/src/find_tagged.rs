//! `find_created` for a resource found by its create-token tag ([`CREATE_TOKEN_TAG`]): the
//! frame around a service's own listing and read (API Gateway's REST APIs, usage plans and API
//! keys; API Gateway v2's APIs). The request is parsed, the listing paged through
//! ([`all_pages`]) for the items carrying the token ([`carries_token`]), more than one refused
//! ([`one_tagged`]), and the one found answered with its properties ([`find_created_answer`]).

use std::collections::HashMap;
use std::future::Future;

use cdkd_provider_api::protocol::{
    operation, FindCreatedRequest, FindCreatedResult, CREATE_TOKEN_TAG,
};
use cdkd_provider_api::{ErrorKind, ProviderError};
use serde_json::{Map, Value};

/// The `find_created` request sent to `type_name`'s `invoke_other` as operation `asked` (any
/// other operation is unsupported), and the resource it names (`Type LogicalId`) for messages. With
/// `token_required`, a request without the create's token is refused rather than answered
/// "nothing found".
pub fn find_created_request(
    type_name: &str,
    asked: &str,
    request: Value,
    token_required: bool,
) -> Result<(FindCreatedRequest, String), ProviderError> {
    if asked != operation::FIND_CREATED {
        return Err(ProviderError::unsupported(format!(
            "{type_name} does not implement the '{asked}' operation"
        )));
    }
    let request: FindCreatedRequest = serde_json::from_value(request)
        .map_err(|e| ProviderError::validation(format!("{type_name}: {asked}: {e}")))?;
    let what = format!("{type_name} {}", request.logical_id);
    if token_required && request.token.is_empty() {
        return Err(ProviderError::validation(format!(
            "{what}: {asked} needs the create's token"
        )));
    }
    Ok((request, what))
}

/// Whether a listed item's tags carry the create's `token` (an empty token carries none).
pub fn carries_token(tags: Option<&HashMap<String, String>>, token: &str) -> bool {
    !token.is_empty()
        && tags
            .and_then(|t| t.get(CREATE_TOKEN_TAG))
            .is_some_and(|t| t == token)
}

/// Every page's items, in order: `page` is asked for the first page (`None`), then for each
/// next one its answer names (a position or next token; an empty or absent one ends the
/// listing).
pub async fn all_pages<T, F, Fut>(mut page: F) -> Result<Vec<T>, ProviderError>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>), ProviderError>>,
{
    let mut all = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let (items, after) = page(next.take()).await?;
        all.extend(items);
        match after {
            Some(after) if !after.is_empty() => next = Some(after),
            _ => return Ok(all),
        }
    }
}

/// The one id among `ids` (the `noun`, plural, tagged with the create's `token`): none, or a
/// conflict when several are, since cdkd cannot tell which one its create made.
pub fn one_tagged(
    what: &str,
    noun: &str,
    token: &str,
    mut ids: Vec<String>,
) -> Result<Option<String>, ProviderError> {
    ids.sort();
    ids.dedup();
    if ids.len() > 1 {
        return Err(ProviderError::new(
            ErrorKind::CONFLICT,
            format!(
                "{what}: {} {noun} carry the create token {CREATE_TOKEN_TAG}={token}: {}; cdkd cannot tell which one its create made (delete the extra ones, or import the right one)",
                ids.len(),
                ids.join(", ")
            ),
        ));
    }
    Ok(ids.pop())
}

/// The `find_created` answer: the resource found (its physical id and properties), or nothing.
pub fn find_created_answer(
    found: Option<(String, Map<String, Value>)>,
) -> Result<Value, ProviderError> {
    let result = match found {
        Some((id, properties)) => FindCreatedResult {
            physical_id: Some(id),
            properties,
        },
        None => FindCreatedResult::default(),
    };
    serde_json::to_value(result).map_err(|e| ProviderError::other(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_request_needs_the_operation_and_where_asked_the_token() {
        let request = json!({"logicalId": "Api", "token": ""});
        let err = find_created_request("T", "other", request.clone(), false).unwrap_err();
        assert_eq!(err.kind, ErrorKind::UNSUPPORTED);
        let (parsed, what) =
            find_created_request("T", operation::FIND_CREATED, request.clone(), false).unwrap();
        assert_eq!(
            (parsed.logical_id.as_str(), what.as_str()),
            ("Api", "T Api")
        );
        let err = find_created_request("T", operation::FIND_CREATED, request, true).unwrap_err();
        assert_eq!(err.kind, ErrorKind::VALIDATION);
        assert!(
            err.message.contains("needs the create's token"),
            "{}",
            err.message
        );
    }

    #[test]
    fn tags_carry_the_token_and_more_than_one_tagged_is_a_conflict() {
        let tags = HashMap::from([(CREATE_TOKEN_TAG.to_string(), "t1".to_string())]);
        assert!(carries_token(Some(&tags), "t1"));
        assert!(!carries_token(Some(&tags), "t2"));
        assert!(!carries_token(Some(&tags), ""));
        assert!(!carries_token(None, "t1"));
        assert_eq!(one_tagged("w", "APIs", "t1", vec![]).unwrap(), None);
        assert_eq!(
            one_tagged("w", "APIs", "t1", vec!["a".into(), "a".into()]).unwrap(),
            Some("a".to_string())
        );
        let err = one_tagged("w", "APIs", "t1", vec!["b".into(), "a".into()]).unwrap_err();
        assert_eq!(err.kind, ErrorKind::CONFLICT);
        assert!(
            err.message.contains("2 APIs carry the create token"),
            "{}",
            err.message
        );
        assert!(err.message.contains("a, b"), "{}", err.message);
    }

    #[tokio::test]
    async fn pages_are_followed_until_none_is_named() {
        let mut asked = Vec::new();
        let all = all_pages(|next: Option<String>| {
            asked.push(next.clone());
            async move {
                Ok(match next.as_deref() {
                    None => (vec![1, 2], Some("p2".to_string())),
                    Some("p2") => (vec![3], Some(String::new())),
                    Some(other) => panic!("asked for {other}"),
                })
            }
        })
        .await
        .unwrap();
        assert_eq!(all, [1, 2, 3]);
        assert_eq!(asked, [None, Some("p2".to_string())]);
        let answer = find_created_answer(Some(("id1".into(), Map::new()))).unwrap();
        assert_eq!(answer["physicalId"], "id1");
        assert!(find_created_answer(None)
            .unwrap()
            .get("physicalId")
            .is_none_or(Value::is_null));
    }
}
