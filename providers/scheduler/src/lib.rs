//! cdkd's EventBridge Scheduler provider plugin: `AWS::Scheduler::Schedule` and
//! `AWS::Scheduler::ScheduleGroup` through direct Scheduler calls. A schedule is addressed by its
//! name and its group (the template's `GroupName`, `default` without one), a group by its name;
//! tags go by ARN.

mod schedule;
mod schedule_group;

cdkd_provider_api::export_plugin!(description: "AWS::Scheduler::Schedule and ScheduleGroup through the EventBridge Scheduler API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<schedule::Schedule>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<schedule_group::ScheduleGroup>);

use aws_sdk_scheduler::primitives::{DateTime, DateTimeFormat};
pub(crate) use cdkd_aws_common::found;
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};

/// An EventBridge Scheduler client for the host's endpoint and credentials.
pub(crate) async fn client(
    ctx: &PluginContext,
) -> Result<aws_sdk_scheduler::Client, ProviderError> {
    let config = aws_sdk_scheduler::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-scheduler"))
        .build();
    Ok(aws_sdk_scheduler::Client::from_conf(config))
}

/// The kind Scheduler's own error codes stand for, where the shared table has none: its codes
/// end in `Exception`, which the shared suffix rules do not read.
pub(crate) const SCHEDULER_KINDS: &[(&str, ErrorKind)] = &[
    // A create's "already exists"; elsewhere a change racing another (see
    // [`with_create_kind`]).
    ("ConflictException", ErrorKind::CONFLICT),
    ("ServiceQuotaExceededException", ErrorKind::VALIDATION),
    // A 500 of the service: a later try succeeds.
    ("InternalServerException", ErrorKind::SERVICE_ERROR),
];

/// `err` (from [`cdkd_aws_common::aws_error`]) with the kind its Scheduler code stands for;
/// unchanged when the code is not Scheduler's own.
pub(crate) fn with_scheduler_kind(err: ProviderError) -> ProviderError {
    cdkd_aws_common::reclassify(err, SCHEDULER_KINDS)
}

/// `err` of a create call: Scheduler answers a name already taken with `ConflictException`.
pub(crate) fn with_create_kind(mut err: ProviderError) -> ProviderError {
    err = with_scheduler_kind(err);
    if err.aws_code.as_ref().into_option().map(|c| c.as_str()) == Some("ConflictException") {
        err.kind = ErrorKind::ALREADY_EXISTS;
    }
    err
}

/// A `map_err` closure turning an SDK error of the call `$call` into a provider error with
/// Scheduler's kinds, naming `$what` and the call.
macro_rules! scheduler_error {
    ($what:expr, $call:expr) => {
        cdkd_aws_common::call_error!($crate::SCHEDULER_KINDS, $what, $call)
    };
}
pub(crate) use scheduler_error;

/// The longest client token Scheduler takes.
const MAX_CLIENT_TOKEN: usize = 64;

/// The create token as Scheduler's own idempotency `ClientToken` (`[a-zA-Z0-9-_]{1,64}`):
/// itself when it fits, else a stable hash of it, so every attempt of one create sends the same
/// value and a retried create answers the first one's result.
pub(crate) fn client_token(token: &str) -> Option<String> {
    let fits = token.len() <= MAX_CLIENT_TOKEN
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if token.is_empty() {
        None
    } else if fits {
        Some(token.to_string())
    } else {
        Some(format!(
            "cdkd-{:016x}",
            cdkd_aws_common::stable_hash(&[token])
        ))
    }
}

/// An ISO 8601 date-time as CloudFormation writes one (`2030-01-01T00:00:00Z`, a fraction or
/// an offset such as `+09:00` allowed; a date-time without a zone is taken as UTC); `None` when
/// it is not one.
pub(crate) fn parse_date(text: &str) -> Option<DateTime> {
    let text = text.trim();
    if let Ok(date) = DateTime::from_str(text, DateTimeFormat::DateTime) {
        return Some(date);
    }
    // An explicit offset: read the local time as UTC, then shift it back by the offset.
    if text.len() > 6 && text.is_char_boundary(text.len() - 6) {
        let (local, zone) = text.split_at(text.len() - 6);
        let zone = zone.as_bytes();
        if (zone[0] == b'+' || zone[0] == b'-') && zone[3] == b':' {
            let digits = |a: u8, b: u8| -> Option<i64> {
                (a.is_ascii_digit() && b.is_ascii_digit())
                    .then(|| i64::from(a - b'0') * 10 + i64::from(b - b'0'))
            };
            let offset = digits(zone[1], zone[2])? * 3600 + digits(zone[4], zone[5])? * 60;
            let offset = if zone[0] == b'+' { offset } else { -offset };
            let base = DateTime::from_str(&format!("{local}Z"), DateTimeFormat::DateTime).ok()?;
            return Some(DateTime::from_secs_and_nanos(
                base.secs() - offset,
                base.subsec_nanos(),
            ));
        }
    }
    DateTime::from_str(&format!("{text}Z"), DateTimeFormat::DateTime).ok()
}

/// A date-time Scheduler answered, as an ISO 8601 string in UTC.
pub(crate) fn iso_date(date: &DateTime) -> Option<String> {
    date.fmt(DateTimeFormat::DateTime).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_codes_get_their_kinds() {
        assert_eq!(
            cdkd_aws_common::kind_in(SCHEDULER_KINDS, "ConflictException"),
            Some(ErrorKind::CONFLICT)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(SCHEDULER_KINDS, "ServiceQuotaExceededException"),
            Some(ErrorKind::VALIDATION)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(SCHEDULER_KINDS, "ResourceNotFoundException"),
            None
        );
        let conflict =
            || ProviderError::new(ErrorKind::OTHER, "taken").with_aws_code("ConflictException");
        assert_eq!(with_scheduler_kind(conflict()).kind, ErrorKind::CONFLICT);
        assert_eq!(with_create_kind(conflict()).kind, ErrorKind::ALREADY_EXISTS);
        let gone = with_create_kind(
            ProviderError::new(ErrorKind::NOT_FOUND, "no group")
                .with_aws_code("ResourceNotFoundException"),
        );
        assert_eq!(gone.kind, ErrorKind::NOT_FOUND);
    }

    #[test]
    fn the_client_token_fits_schedulers_limit_and_stays_the_same() {
        assert_eq!(client_token(""), None);
        assert_eq!(
            client_token("cdkd-run1-00ab"),
            Some("cdkd-run1-00ab".into())
        );
        let exact = "t".repeat(64);
        assert_eq!(client_token(&exact), Some(exact.clone()));
        let long = "t".repeat(65);
        let fitted = client_token(&long).unwrap();
        assert_eq!(fitted.len(), "cdkd-".len() + 16);
        assert!(fitted.starts_with("cdkd-"), "{fitted}");
        assert_eq!(client_token(&long), Some(fitted.clone()));
        assert_ne!(client_token(&"u".repeat(65)), Some(fitted));
        // A character Scheduler refuses in a token is hashed away too.
        let odd = client_token("run:1/a").unwrap();
        assert!(
            odd.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "{odd}"
        );
    }

    #[test]
    fn dates_read_in_every_iso_spelling() {
        let utc = parse_date("2030-01-02T03:04:05Z").unwrap();
        assert_eq!(iso_date(&utc).as_deref(), Some("2030-01-02T03:04:05Z"));
        assert_eq!(parse_date("2030-01-02T03:04:05.000Z"), Some(utc));
        assert_eq!(parse_date("2030-01-02T12:04:05+09:00"), Some(utc));
        assert_eq!(parse_date("2030-01-01T22:04:05-05:00"), Some(utc));
        assert_eq!(parse_date("2030-01-02T03:04:05"), Some(utc));
        assert_eq!(parse_date("tomorrow"), None);
    }
}
