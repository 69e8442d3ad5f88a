//! IAM propagation: a role, instance profile or user IAM made moments ago is refused by the
//! services that use it (Lambda, Step Functions, EventBridge, SNS, SQS, S3, KMS, EC2, ...) for
//! 7-12 s typically, with a tail of a minute or more. Their calls are tried again while the
//! service answers its propagation error, for a bounded time, and then fail naming what IAM
//! had not propagated.

use std::future::Future;
use std::time::Duration;

use cdkd_provider_api::ProviderError;

use crate::retry_while;

/// How long a consumer waits for IAM to propagate a principal made in the same run:
/// Terraform's `iamPropagationTimeout` (the 47.75 s budget of the reference has been seen to
/// run out).
pub const IAM_PROPAGATION: Duration = Duration::from_secs(120);

/// The first pause between two tries: each is a write, and IAM takes seconds anyway.
const FIRST_PAUSE: Duration = Duration::from_millis(500);

/// `call` again while `propagating` reads its error as the service not seeing `principal`
/// yet, for up to [`IAM_PROPAGATION`] (paced by the time waited, from 500 ms up to 5 s); when
/// that runs out, the last error with `principal` and the time waited added
/// ([`not_propagated`]). Any other answer is returned as it is.
pub async fn while_iam_propagates<T, F, Fut>(
    principal: &str,
    propagating: impl Fn(&ProviderError) -> bool,
    call: F,
) -> Result<T, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ProviderError>>,
{
    let started = tokio::time::Instant::now();
    match retry_while(FIRST_PAUSE, IAM_PROPAGATION, |e, _| propagating(e), call).await {
        Err(err) if propagating(&err) => Err(not_propagated(err, principal, started.elapsed())),
        other => other,
    }
}

/// `err`, a service still refusing `principal` after `waited`, saying so.
pub fn not_propagated(mut err: ProviderError, principal: &str, waited: Duration) -> ProviderError {
    err.message = format!(
        "{} (still refused after {:.0?} of waiting for IAM to propagate {principal}: check that it exists and that the service may use it)",
        err.message,
        Duration::from_secs(waited.as_secs())
    )
    .into();
    err
}

/// The IAM principals (`Principal.AWS`) a policy document names, for a message: "the
/// principals A, B", or "its policy's principals" when it names none (or is not JSON).
pub fn policy_principals(policy: &serde_json::Value) -> String {
    let parsed;
    let policy = match policy {
        serde_json::Value::String(text) => {
            parsed = serde_json::from_str(text).unwrap_or(serde_json::Value::Null);
            &parsed
        }
        other => other,
    };
    let statements = match &policy["Statement"] {
        serde_json::Value::Array(all) => all.iter().collect(),
        one @ serde_json::Value::Object(_) => vec![one],
        _ => Vec::new(),
    };
    let mut names: Vec<String> = Vec::new();
    for statement in statements {
        let aws = &statement["Principal"]["AWS"];
        let values = match aws {
            serde_json::Value::Array(all) => all.iter().collect(),
            other => vec![other],
        };
        for value in values {
            let name = match value {
                serde_json::Value::String(text) => text.clone(),
                serde_json::Value::Null => continue,
                other => other.to_string(),
            };
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    if names.is_empty() {
        "its policy's principals".into()
    } else {
        format!("the principals {}", names.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdkd_provider_api::ErrorKind;
    use serde_json::json;

    fn refused() -> ProviderError {
        ProviderError::new(
            ErrorKind::VALIDATION,
            "T F: CreateFunction: The role defined for the function cannot be assumed by Lambda.",
        )
    }

    fn is_refusal(err: &ProviderError) -> bool {
        err.message.contains("cannot be assumed")
    }

    #[tokio::test(start_paused = true)]
    async fn a_refused_principal_is_waited_for_until_it_propagates() {
        let started = tokio::time::Instant::now();
        let answer = while_iam_propagates("role r", is_refusal, || {
            let result = if started.elapsed() < Duration::from_secs(9) {
                Err(refused())
            } else {
                Ok("created")
            };
            async move { result }
        })
        .await;
        assert_eq!(answer.unwrap(), "created");
        // Seen within a second of propagating at 9 s.
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_principal_never_propagated_is_named_after_the_budget() {
        let started = tokio::time::Instant::now();
        let err = while_iam_propagates("role arn:aws:iam::1:role/r", is_refusal, || async {
            Err::<(), _>(refused())
        })
        .await
        .unwrap_err();
        assert!(started.elapsed() <= IAM_PROPAGATION);
        assert!(started.elapsed() >= IAM_PROPAGATION - Duration::from_secs(5));
        assert_eq!(err.kind, ErrorKind::VALIDATION);
        assert!(
            err.message
                .starts_with("T F: CreateFunction: The role defined")
                && err
                    .message
                    .contains("waiting for IAM to propagate role arn:aws:iam::1:role/r"),
            "{}",
            err.message
        );
        let other = while_iam_propagates("role r", is_refusal, || async {
            Err::<(), _>(ProviderError::validation("bad runtime"))
        })
        .await
        .unwrap_err();
        assert_eq!(other.message.as_str(), "bad runtime");
    }

    #[test]
    fn a_policy_names_its_principals() {
        let policy = json!({"Statement": [
            {"Principal": {"AWS": "arn:aws:iam::1:role/a"}},
            {"Principal": {"AWS": ["arn:aws:iam::1:role/a", "arn:aws:iam::1:role/b"]}},
            {"Principal": {"Service": "sns.amazonaws.com"}}
        ]});
        assert_eq!(
            policy_principals(&policy),
            "the principals arn:aws:iam::1:role/a, arn:aws:iam::1:role/b"
        );
        let text = json!(r#"{"Statement": {"Principal": {"AWS": "arn:aws:iam::1:user/u"}}}"#);
        assert_eq!(
            policy_principals(&text),
            "the principals arn:aws:iam::1:user/u"
        );
        assert_eq!(policy_principals(&json!("nope")), "its policy's principals");
    }
}
